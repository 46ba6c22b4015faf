/**
 * Options of `createTokenExchange()` and of one `exchange()`: validated once (the options, at
 * construction) or per call (the target), with the option kit's messages. The client part
 * (issuer, client authentication, retries, timeouts, shared cache) is the token source's own.
 *
 * @module
 */
import { fail, integer, oneOf, optionalFunction, record, validateFor } from '../validate.js'
import type { TokenSourceError, TokenSourceErrorCode } from './errors.js'
import {
  type NormalizedTokenSourceOptions,
  normalizeClientPart,
  type TokenSourceOptions,
} from './options.js'
import { audienceOption, resourceOption, scopeOption } from './parameters.js'

/** RFC 8693 §3 token type identifiers. */
export const TOKEN_TYPES = {
  accessToken: 'urn:ietf:params:oauth:token-type:access_token',
  jwt: 'urn:ietf:params:oauth:token-type:jwt',
} as const

/** RFC 8693 §2.1. */
export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange'
/** RFC 7523 §2.1, which Entra ID's on-behalf-of flow uses with `requested_token_use=on_behalf_of`. */
export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer'

/**
 * The shape of the provider's exchange:
 * - `rfc8693`: RFC 8693 token exchange; a string target is sent as `resource`.
 * - `keycloak`, `okta`, `auth0`: RFC 8693 token exchange with the target sent as `audience`
 *   (Keycloak's client id of the target, Okta's authorization server audience, Auth0's API
 *   identifier). Auth0 also needs `subjectTokenType`: the URI of its Custom Token Exchange profile.
 * - `entra`: Entra ID's on-behalf-of flow (the `jwt-bearer` grant with
 *   `requested_token_use=on_behalf_of`); a string target becomes the scope `{target}/.default`.
 */
export type ExchangeProfile = 'rfc8693' | 'keycloak' | 'okta' | 'auth0' | 'entra'

/** Options of `createTokenExchange()`. */
export interface TokenExchangeOptions
  extends Pick<
    TokenSourceOptions,
    | 'issuer'
    | 'tokenEndpoint'
    | 'discovery'
    | 'clientId'
    | 'clientAuth'
    | 'clientSecret'
    | 'privateKey'
    | 'privateKeyId'
    | 'privateKeyAlgorithm'
    | 'renewal'
    | 'retry'
    | 'timeoutMs'
    | 'allowInsecureHttp'
    | 'sharedCache'
    | 'fetch'
    | 'clock'
  > {
  /**
   * The provider's shape of the exchange (see {@link ExchangeProfile}). Default: read from the
   * issuer (`…/realms/…` Keycloak, `login.microsoftonline.com` / `sts.windows.net` Entra,
   * `*.okta.com` Okta, `*.auth0.com` Auth0), else `rfc8693`.
   */
  readonly profile?: ExchangeProfile
  /**
   * `subject_token_type` sent with the subject token. Default
   * `urn:ietf:params:oauth:token-type:access_token`; Auth0's Custom Token Exchange takes the URI
   * its profile was created with.
   */
  readonly subjectTokenType?: string
  /** Most exchanged tokens held in memory (one per subject token, target and scope). Default 10000. */
  readonly maxEntries?: number
  /** Receives exchange events, for audit (never a token). Exceptions it throws are ignored. */
  readonly onEvent?: (event: TokenExchangeEvent) => void
}

/** What every exchange event says: who exchanged, for whom, for what. Never a token. */
export interface ExchangeFacts {
  readonly issuer: string
  readonly clientId: string
  /** RFC 8693 token exchange, or Entra's on-behalf-of. */
  readonly grant: 'token_exchange' | 'on_behalf_of'
  /** The subject token's `sub`, when it is a JWT that has one: the user acted for. */
  readonly subject: string | undefined
  readonly resource: readonly string[]
  readonly audience: string | undefined
  readonly scope: string | undefined
}

/** Everything an exchanger reports. Discriminated by `type`. */
export type TokenExchangeEvent =
  | ({
      /** A request to the token endpoint starts (`attempt` counts retries from 1). */
      readonly type: 'exchange_requested'
      readonly attempt: number
    } & ExchangeFacts)
  | ({
      /** A token was obtained: from the provider, or from the fleet's shared cache. */
      readonly type: 'token_exchanged'
      readonly from: 'provider' | 'shared_cache'
      readonly expiresInSeconds: number
      readonly durationMs: number
    } & ExchangeFacts)
  | ({
      /** An attempt failed; `willRetry` says whether another follows. */
      readonly type: 'exchange_failed'
      readonly code: TokenSourceErrorCode
      readonly retryable: boolean
      readonly willRetry: boolean
      readonly error: TokenSourceError
    } & ExchangeFacts)

/** One exchange's target (RFC 8693 §2.1): where the new token is for, and with what scope. */
export interface ExchangeTarget {
  /** RFC 8707 / RFC 8693 `resource`: the product's URI (`https://office.example.com`). */
  readonly resource?: string | readonly string[]
  /** RFC 8693 `audience`: the product's logical name at the provider (Keycloak's client id). */
  readonly audience?: string
  /** The scope of the new token; request the minimum the call needs. */
  readonly scope?: string | readonly string[]
  /** RFC 8693 `actor_token`: a token naming the party that acts (not with `entra`). */
  readonly actorToken?: string
  /** `actor_token_type`. Default `urn:ietf:params:oauth:token-type:access_token`. */
  readonly actorTokenType?: string
  /** RFC 8693 `requested_token_type`. Default: the provider's (an access token). */
  readonly requestedTokenType?: string
}

/** {@link TokenExchangeOptions}, validated and frozen. */
export interface NormalizedTokenExchangeOptions {
  readonly client: NormalizedTokenSourceOptions
  readonly profile: ExchangeProfile
  readonly subjectTokenType: string
  readonly maxEntries: number
  readonly onEvent: ((event: TokenExchangeEvent) => void) | undefined
}

/** {@link ExchangeTarget}, validated: scopes sorted, so equal requests share a key. */
export interface NormalizedTarget {
  readonly resource: readonly string[]
  readonly audience: string | undefined
  readonly scope: string | undefined
  readonly actorToken: string | undefined
  readonly actorTokenType: string | undefined
  readonly requestedTokenType: string | undefined
}

const OWN_KEYS = ['profile', 'subjectTokenType', 'maxEntries', 'onEvent']
const CLIENT_KEYS = [
  'issuer',
  'tokenEndpoint',
  'discovery',
  'clientId',
  'clientAuth',
  'clientSecret',
  'privateKey',
  'privateKeyId',
  'privateKeyAlgorithm',
  'renewal',
  'retry',
  'timeoutMs',
  'allowInsecureHttp',
  'sharedCache',
  'fetch',
  'clock',
]
const TARGET_KEYS = [
  'resource',
  'audience',
  'scope',
  'actorToken',
  'actorTokenType',
  'requestedTokenType',
]
const PROFILES = ['rfc8693', 'keycloak', 'okta', 'auth0', 'entra'] as const
// RFC 3986 absolute URI, as RFC 8693 §3 token type identifiers are.
const URI = /^[A-Za-z][A-Za-z0-9+.-]*:[\x21-\x7E]+$/

/** The profile an issuer URL names, when it is one of the providers tollgate has a profile for. */
export function profileOf(issuer: string): ExchangeProfile {
  const url = new URL(issuer)
  const host = url.hostname.toLowerCase()
  if (host === 'login.microsoftonline.com' || host === 'sts.windows.net') return 'entra'
  if (/\.okta(preview)?\.com$/.test(host)) return 'okta'
  if (/\.auth0\.com$/.test(host)) return 'auth0'
  if (/\/realms\/[^/]+\/?$/.test(url.pathname)) return 'keycloak'
  return 'rfc8693'
}

function uriOption(value: unknown, path: string): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string' || value.length > 1024 || !URI.test(value)) {
    fail(path, 'must be an absolute URI (urn:ietf:params:oauth:token-type:…)', value)
  }
  return value
}

/**
 * Validates {@link TokenExchangeOptions} once, at construction.
 *
 * @throws TypeError `createTokenExchange(options): "<option>" …`, never quoting a secret.
 */
export function normalizeTokenExchangeOptions(input: unknown): NormalizedTokenExchangeOptions {
  return validateFor('createTokenExchange(options):', () => {
    const options = record(input, 'options', [...CLIENT_KEYS, ...OWN_KEYS])
    const clientPart: Record<string, unknown> = {}
    for (const key of CLIENT_KEYS) if (options[key] !== undefined) clientPart[key] = options[key]
    const client = normalizeClientPart(clientPart)
    const profile =
      options['profile'] === undefined
        ? profileOf(client.server.issuer)
        : oneOf(options['profile'], 'profile', PROFILES)
    const subjectTokenType =
      uriOption(options['subjectTokenType'], 'subjectTokenType') ?? TOKEN_TYPES.accessToken
    if (profile === 'auth0' && options['subjectTokenType'] === undefined) {
      fail(
        'subjectTokenType',
        "is required with Auth0: the URI of the Custom Token Exchange profile (its subject_token_type), e.g. 'urn:acme:gateway-token'",
      )
    }
    return Object.freeze({
      client,
      profile,
      subjectTokenType,
      maxEntries: integer(options['maxEntries'], 'maxEntries', {
        fallback: 10_000,
        min: 1,
        max: 1_000_000,
      }),
      onEvent: optionalFunction<(event: TokenExchangeEvent) => void>(
        options['onEvent'],
        'onEvent',
        '(event) => void',
      ),
    })
  })
}

/**
 * Validates one exchange's target. A string is the product's identifier, sent as the profile
 * sends targets (`resource`, `audience`, or Entra's `{target}/.default` scope).
 *
 * @throws TypeError `exchange(subjectToken, target): …`.
 */
export function normalizeTarget(
  input: unknown,
  profile: ExchangeProfile,
  prefix = 'exchange(subjectToken, target):',
): NormalizedTarget {
  return validateFor(prefix, () => {
    let value: Record<string, unknown>
    if (typeof input === 'string') {
      if (input === '') fail('target', 'must be a non-empty string or an object', input)
      value =
        profile === 'rfc8693'
          ? { resource: input }
          : profile === 'entra'
            ? { scope: `${input.replace(/\/+$/, '')}/.default` }
            : { audience: input }
    } else {
      value = record(input, 'target', TARGET_KEYS)
    }
    const resource =
      value['resource'] === undefined ? [] : resourceOption(value['resource'], 'target.resource')
    const audience =
      value['audience'] === undefined
        ? undefined
        : audienceOption(value['audience'], 'target.audience')
    const scope =
      value['scope'] === undefined ? undefined : scopeOption(value['scope'], 'target.scope')
    if (profile === 'entra') {
      if (scope === undefined) {
        fail(
          'target.scope',
          "is required with Entra's on-behalf-of flow ('api://office/.default', or the API's delegated scopes)",
        )
      }
      if (value['actorToken'] !== undefined) {
        fail('target.actorToken', "is not part of Entra's on-behalf-of flow; leave it out")
      }
    } else if (resource.length === 0 && audience === undefined && scope === undefined) {
      fail('target', 'must name a "resource", an "audience" or a "scope": what the token is for')
    }
    const actorToken = value['actorToken']
    if (actorToken !== undefined && (typeof actorToken !== 'string' || actorToken === '')) {
      fail('target.actorToken', 'must be a non-empty string (a token)', actorToken)
    }
    return Object.freeze({
      resource,
      audience,
      scope,
      actorToken: actorToken as string | undefined,
      actorTokenType:
        actorToken === undefined
          ? undefined
          : (uriOption(value['actorTokenType'], 'target.actorTokenType') ??
            TOKEN_TYPES.accessToken),
      requestedTokenType: uriOption(value['requestedTokenType'], 'target.requestedTokenType'),
    })
  })
}

/** The form of one exchange, in the profile's shape. */
export function exchangeBody(
  subjectToken: string,
  target: NormalizedTarget,
  settings: NormalizedTokenExchangeOptions,
): { readonly grantType: string; readonly body: URLSearchParams } {
  const body = new URLSearchParams()
  if (settings.profile === 'entra') {
    body.set('assertion', subjectToken)
    body.set('requested_token_use', 'on_behalf_of')
    body.set('scope', target.scope as string)
    return { grantType: JWT_BEARER_GRANT, body }
  }
  body.set('subject_token', subjectToken)
  body.set('subject_token_type', settings.subjectTokenType)
  if (target.actorToken !== undefined) {
    body.set('actor_token', target.actorToken)
    body.set('actor_token_type', target.actorTokenType as string)
  }
  if (target.requestedTokenType !== undefined) {
    body.set('requested_token_type', target.requestedTokenType)
  }
  for (const resource of target.resource) body.append('resource', resource)
  if (target.audience !== undefined) body.set('audience', target.audience)
  if (target.scope !== undefined) body.set('scope', target.scope)
  return { grantType: TOKEN_EXCHANGE_GRANT, body }
}
