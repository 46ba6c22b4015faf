/**
 * Issuer allow-list entries, and the `keycloak()` helper that builds them from the spec's paths.
 *
 * @module
 */
import { describeValue } from '../validate.js'
import type { ClaimMapping } from './claims.js'

/**
 * The fields an issuer entry may carry (as `keycloak()` and the provider profiles build them): the
 * gate validates every one, and `tollgate/client` and sign-in accept the same entries.
 */
export const ISSUER_ENTRY_KEYS: readonly string[] = [
  'issuer',
  'jwksUri',
  'discovery',
  'realm',
  'audience',
  'withoutAudience',
  'accessTokenClaims',
  'claims',
  'introspection',
]

/** One trusted issuer. Keys are fetched only from what is configured here, never from a token. */
export interface IssuerOptions {
  /** The exact `iss` value tokens of this issuer carry. */
  readonly issuer: string
  /** Where its signing keys are. Either this or `discovery: true`. */
  readonly jwksUri?: string
  /**
   * Find `jwks_uri` through `{issuer}/.well-known/openid-configuration`; a document whose
   * `issuer` differs from this entry's is refused (OpenID Connect Discovery §4.3).
   */
  readonly discovery?: boolean
  /** The Keycloak realm, for tenant-by-realm setups. Read from `…/realms/{realm}` when omitted. */
  readonly realm?: string
  /**
   * The audience this issuer's tokens must name, instead of the gate's `audience` (a provider
   * profile sets it: Auth0's API identifier, Entra's application id). When every issuer has one
   * (or `withoutAudience`), the gate's `audience` may be left out.
   */
  readonly audience?: string | readonly string[]
  /**
   * Accept this issuer's tokens that carry no `aud` at all when their client id is one of
   * `clientIds` (Amazon Cognito access tokens have none). A token that has an `aud` is still held
   * to the audience, and to `clientIds` too. Needs `accessTokenClaims`: without an audience, only
   * such a claim tells an access token from an ID token issued to the same client.
   */
  readonly withoutAudience?: { readonly clientIds: readonly string[] }
  /**
   * Claims that mark this issuer's access tokens, with their exact string values (Cognito:
   * `{ token_use: 'access' }`); a token without them is refused as `token_type`.
   */
  readonly accessTokenClaims?: Readonly<Record<string, string>>
  /** Where this issuer's tokens keep scopes, roles and the client id (see {@link ClaimMapping}). */
  readonly claims?: ClaimMapping
}

/** Options of {@link keycloak}. */
export interface KeycloakOptions {
  /** The identity provider's base address (`{auth_url}` in the spec), e.g. `https://sso.example.com`. */
  readonly authUrl: string
  /** Realm names; each becomes one trusted issuer. */
  readonly realms?: readonly string[]
  /** One realm, instead of `realms` (what a `tollgate/client` token source takes). */
  readonly realm?: string
}

const REALM_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/

/**
 * Issuers for Keycloak realms: issuer `{authUrl}/realms/{realm}`, keys at
 * `{issuer}/protocol/openid-connect/certs`. `realm: 'acme'` is the same as `realms: ['acme']`.
 *
 * @example
 * ```ts
 * createGate({ issuers: keycloak({ authUrl: 'https://sso.example.com', realms: ['acme'] }), audience: 'gateway' })
 * ```
 * @throws TypeError when `authUrl` is not an http(s) URL or already names a realm (`…/realms/…`),
 *   or a realm name is not a plain path segment.
 */
export function keycloak(options: KeycloakOptions): IssuerOptions[] {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('keycloak(options): "options" must be an object with authUrl and realms')
  }
  const { authUrl } = options
  if (options.realm !== undefined && options.realms !== undefined) {
    throw new TypeError('keycloak(options): give "realms" or "realm", not both')
  }
  const realms = options.realm === undefined ? options.realms : [options.realm]
  let base: URL
  try {
    base = new URL(authUrl)
  } catch {
    throw new TypeError(
      `keycloak(options): "authUrl" must be an absolute http(s) URL (got ${describeValue(authUrl, 'url')})`,
    )
  }
  if ((base.protocol !== 'https:' && base.protocol !== 'http:') || base.search || base.hash) {
    throw new TypeError(
      `keycloak(options): "authUrl" must be an http(s) URL without query or fragment (got ${describeValue(authUrl, 'url')})`,
    )
  }
  if (!Array.isArray(realms) || realms.length === 0) {
    throw new TypeError('keycloak(options): "realms" must be a non-empty array of realm names')
  }
  // An authUrl that already names a realm would build `…/realms/acme/realms/acme`: every token
  // then fails as unknown_issuer and every key fetch 404s, with nothing pointing here.
  const segments = base.pathname.split('/')
  const realmsAt = segments.indexOf('realms')
  if (realmsAt !== -1) {
    const shown = `${base.origin}${base.pathname}`
    const root = `${base.origin}${segments.slice(0, realmsAt).join('/')}`
    throw new TypeError(
      `keycloak(options): "authUrl" must be the server's base address, without /realms/…: got "${shown}"; ` +
        `give authUrl "${root}" and the realm names in "realms"`,
    )
  }
  const root = authUrl.replace(/\/+$/, '')
  return realms.map((realm: unknown, index) => {
    if (typeof realm !== 'string' || !REALM_NAME.test(realm)) {
      const at = options.realm === undefined ? `realms[${index}]` : 'realm'
      throw new TypeError(
        `keycloak(options): "${at}" must be a realm name of letters, digits, ".", "_" or "-" (got ${describeValue(realm, true)})`,
      )
    }
    const issuer = `${root}/realms/${realm}`
    return { issuer, jwksUri: `${issuer}/protocol/openid-connect/certs`, realm }
  })
}

const REALM_IN_ISSUER = /\/realms\/([^/?#]+)\/?$/

/** The realm an issuer URL names, if it follows Keycloak's `…/realms/{realm}` shape. */
export function realmOf(issuer: IssuerOptions): string | undefined {
  return issuer.realm ?? REALM_IN_ISSUER.exec(issuer.issuer)?.[1]
}

/** `true` for 127.0.0.0/8, ::1 and localhost: where plain http never leaves the machine. */
export function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname)
}

/**
 * Why a URL may not serve signing keys, or `undefined` when it may: keys travel over https, or
 * over plain http only to loopback or where the deployment explicitly accepts it.
 */
export function keyUrlProblem(value: string, allowInsecureHttp: boolean): string | undefined {
  return httpsUrlProblem(
    value,
    allowInsecureHttp,
    'must be https (or set jwks.allowInsecureHttp: true on a trusted network)',
  )
}

/**
 * Why a URL may not be called with secrets (keys, tokens, client credentials): `undefined` for
 * https, or plain http to loopback or where `allowInsecureHttp` accepts it; else the problem,
 * `insecure` for plain http elsewhere.
 */
export function httpsUrlProblem(
  value: string,
  allowInsecureHttp: boolean,
  insecure: string,
): string | undefined {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return 'must be an absolute https URL'
  }
  if (url.username || url.password) return 'must not carry credentials'
  if (url.protocol === 'https:') return undefined
  if (url.protocol !== 'http:') return 'must be an https URL'
  if (isLoopback(url.hostname) || allowInsecureHttp) return undefined
  return insecure
}
