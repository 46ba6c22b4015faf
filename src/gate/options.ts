/**
 * Option types and their schema: validation once, at construction, defaults, and the reference
 * table. The hot path receives frozen, complete settings and never checks them again.
 * Misconfiguration is a `TypeError` naming the option and what to change; it never reaches a
 * request as a 401.
 *
 * @module
 */

import { type MtlsOptions, normalizeMtlsOptions } from '../binding/options.js'
import { type DpopOptions, normalizeDpopOptions } from '../dpop/options.js'
import type { GateEventListener } from '../events.js'
import {
  type IssuerIntrospection,
  type NormalizedIntrospection,
  normalizeIntrospection,
} from '../introspection/options.js'
import { normalizeRateLimitOptions, type RateLimitOptions } from '../limits/options.js'
import { normalizeTenantOptions, type TenantOptions } from '../limits/tenant.js'
import {
  normalizeResourceMetadataOptions,
  type ResourceMetadataOptions,
} from '../metadata/resource-metadata.js'
import { choice, custom, flag, fn, group, int, type Normalized } from '../options-kit.js'
import { normalizeRevocationOptions, type RevocationOptions } from '../revocation/options.js'
import { normalizeStatusListOptions, type StatusListOptions } from '../status/options.js'
import { DEFAULT_ALGORITHMS, isJWSAlgorithm, type JWSAlgorithm } from '../token/algorithms.js'
import { type ClaimRules, createClaimReaders } from '../token/claims.js'
import { ISSUER_ENTRY_KEYS, type IssuerOptions, keyUrlProblem, realmOf } from '../token/issuers.js'
import type { NormalizedJWKSOptions } from '../token/jwks.js'
import type { RequestLike } from '../types.js'
import { fail, integer, isRecord, optionalFunction, record } from '../validate.js'
import { type DelegationOptions, normalizeDelegationOptions } from './actors.js'

/** JWKS fetching and caching. All durations in milliseconds. */
export interface JWKSOptions {
  /** Abort a fetch (headers and body) after this long. Default 5000. */
  readonly timeoutMs?: number
  /**
   * Longest interval between refetches for unknown `kid`s, reached while such refetches keep not
   * finding the `kid` they were made for (a flood of random kids). Default 30000.
   */
  readonly cooldownMs?: number
  /**
   * Shortest interval between refetches for unknown `kid`s, and the longest a request with an
   * unknown `kid` waits for the next one (so a key the provider rotated in is accepted on the
   * first request that carries it). Default 500, at most `cooldownMs`.
   */
  readonly minCooldownMs?: number
  /** Keys are refreshed in the background after 80% of this, and must be refreshed after it. Default 600000. */
  readonly maxAgeMs?: number
  /** How long past `maxAgeMs` the last good keys are still used while refreshes fail. Default 3600000. */
  readonly staleIfErrorMs?: number
  /** Larger JWKS (or discovery) responses are refused. Default 262144 (256 KiB). */
  readonly maxBodyBytes?: number
  /** Allow `http:` key URLs to hosts other than loopback (keys could be swapped in transit). Default false. */
  readonly allowInsecureHttp?: boolean
  /** A fetch implementation (proxies, custom CAs). Default: the global `fetch`. */
  readonly fetch?: typeof globalThis.fetch
}

/** The verified-token cache: a hit skips signature verification, never the time and claim checks. */
export interface CacheOptions {
  /** Most tokens kept. Default 5000. */
  readonly maxEntries?: number
  /** Longest a verdict is kept, however far `exp` is. Default 300. */
  readonly maxTtlSeconds?: number
}

/** Options of `createGate()` and of both adapters' `tollgate()`. */
export interface GateOptions {
  /**
   * Trusted issuers (an allow-list; see `keycloak()`). Required. An entry's `introspection` says
   * how its tokens are checked when they are not self-contained JWTs (see docs/introspection.md).
   */
  readonly issuers: readonly (IssuerOptions & IssuerIntrospection)[]
  /**
   * Audiences this service accepts; a token must carry one of them in `aud`. Required, unless
   * every issuer entry names its own (`audience`, or `withoutAudience` as `cognito()` does);
   * an entry's own audience replaces this one for that issuer's tokens.
   */
  readonly audience?: string | readonly string[]
  /** Allowed signature algorithms, asymmetric only. Default `['RS256', 'PS256', 'ES256', 'EdDSA']`. */
  readonly algorithms?: readonly JWSAlgorithm[]
  /** `realm` of the `WWW-Authenticate` challenge. Default `'api'`. */
  readonly realm?: string
  /** Allowed clock skew for `exp`, `nbf` and `iat`, in seconds. Default 5. */
  readonly clockToleranceSeconds?: number
  /** Refuse tokens issued longer ago than this (requires `iat`). Default: no limit. */
  readonly maxTokenAgeSeconds?: number
  /**
   * Refuse tokens whose lifetime (`exp − iat`) is longer than this (requires `iat`): a token valid
   * for 400 days is a leaked signing key's or a misconfigured client's. Default: no limit.
   */
  readonly maxTokenLifetimeSeconds?: number
  /** Claims that must be present and not empty (`null` and `""` count as missing), beyond `iss`, `aud` and `exp`. Default none. */
  readonly requiredClaims?: readonly string[]
  /**
   * Which tokens count as access tokens (RFC 8725 §3.11: a resource server must not accept an ID
   * token). Default `'access'`.
   * - `access`: refuse ID, refresh and logout tokens: by header `typ`, by Keycloak's payload `typ`,
   *   the logout `events` claim, and ID-token-only claims (`nonce`, `at_hash`, `c_hash`, `s_hash`,
   *   `auth_time`) on a token with no access-token marker (header `typ: at+jwt`, payload
   *   `typ: "Bearer"`, `scope`, `scp` or `client_id`).
   * - `keycloak`: as `access`, and require what Keycloak puts in every access token: payload
   *   `typ: "Bearer"` and `azp`.
   * - `rfc9068`: as `access`, and require header `typ: at+jwt` and the claims RFC 9068 makes
   *   mandatory (`sub`, `client_id`, `iat`, `jti`).
   */
  readonly tokenProfile?: 'access' | 'keycloak' | 'rfc9068'
  /** Only tokens issued to these OAuth clients (`azp`, else `client_id`) are accepted. Default: any client. */
  readonly allowedClientIds?: readonly string[]
  /** Longer tokens are refused without being parsed. Default 8192. */
  readonly maxTokenBytes?: number
  /** `false`: a request without credentials proceeds with no `auth` (a bad token is still refused). Default true. */
  readonly credentialsRequired?: boolean
  /** Requests for which the gate does nothing (e.g. CORS preflight). */
  readonly skip?: (request: RequestLike) => boolean
  /** `respond` (default): the adapter answers refusals with JSON. `framework`: it hands the error to the framework's error handling. */
  readonly errorHandling?: 'respond' | 'framework'
  /** JWKS fetching and caching. */
  readonly jwks?: JWKSOptions
  /** Verified-token cache; `false` turns it off. */
  readonly cache?: CacheOptions | false
  /** Resolve a tenant from the verified claims. */
  readonly tenant?: TenantOptions
  /** Per-tenant rate limits (needs `tenant`). */
  readonly rateLimit?: RateLimitOptions
  /** Revocation before `exp`, shared by every instance through Redis (see `RevocationOptions`). */
  readonly revocation?: RevocationOptions
  /** Receives audit and metrics events. Exceptions it throws are ignored. */
  readonly onEvent?: GateEventListener
  /** DPoP-bound tokens (RFC 9449). Default mode `off`: `cnf`-bound tokens are refused. */
  readonly dpop?: DpopOptions
  /**
   * Certificate-bound tokens (RFC 8705 §3): a token with `cnf["x5t#S256"]` is admitted only with
   * that client certificate, from the request's TLS connection or a trusted proxy's RFC 9440
   * `Client-Cert` field. Default off: such tokens are refused. See `MtlsOptions`.
   */
  readonly mtls?: MtlsOptions
  /**
   * Token Status List checks (draft-ietf-oauth-status-list): a token whose `status.status_list`
   * names a list is admitted only while its issuer's list says VALID at its index; the list is
   * fetched, verified with the issuer's own keys and cached. Default off: the `status` claim is
   * not read. See `StatusListOptions`.
   */
  readonly statusList?: StatusListOptions
  /**
   * Delegated tokens (RFC 8693 `act`): which actors may act for users on this API
   * (`allowedActors`), how long a chain may be (`maxChainDepth`, default 1), and the exchanger
   * `auth.tokenFor(target)` uses (`exchange`). Refusals are 403 `ERR_ACTOR_REFUSED`. Without it,
   * `auth.actor` is still read and any well-formed chain is admitted (an `act` that is not an
   * object is refused all the same).
   */
  readonly delegation?: DelegationOptions
  /** Serve RFC 9728 Protected Resource Metadata, and point 401 challenges to it. */
  readonly resourceMetadata?: ResourceMetadataOptions
}

export interface NormalizedIssuer {
  readonly issuer: string
  readonly jwksUri: string | undefined
  readonly discovery: boolean
  readonly realm: string | undefined
  /** How its tokens are introspected; `undefined`: they are JWTs verified locally. */
  readonly introspection: NormalizedIntrospection | undefined
}

const MAPPING_KEYS = ['scopes', 'roles', 'clientId']
const CLAIM_NAME = /^[\x21-\x7E]{1,256}$/

let insecureHttpWarned = false

function keyUrl(value: string, path: string, allowInsecureHttp: boolean): string {
  const problem = keyUrlProblem(value, allowInsecureHttp)
  if (problem !== undefined) fail(path, problem, value, { show: 'url' })
  if (
    value.startsWith('http:') &&
    keyUrlProblem(value, false) !== undefined &&
    !insecureHttpWarned
  ) {
    insecureHttpWarned = true
    process.emitWarning('tollgate fetches signing keys over plain http', {
      code: 'TOLLGATE_INSECURE_KEY_URL',
      detail: 'Anyone on the path can substitute keys. Prefer https.',
    })
  }
  return value
}

/** `true` when `jwksUri` is the one `keycloak()` derives from `issuer`. */
function isKeycloakKeyUrl(issuer: string, jwksUri: string): boolean {
  return jwksUri === `${issuer}/protocol/openid-connect/certs`
}

/**
 * `keycloak({ authUrl })` derives both the issuer and its key URL from `authUrl`: a wrong scheme or
 * credentials there is reported against the issuer the entry names (what the app wrote, through
 * `authUrl`), not against a `jwksUri` it never wrote.
 */
function keycloakIssuerUrl(issuer: string, path: string, allowInsecureHttp: boolean): void {
  const problem = keyUrlProblem(issuer, allowInsecureHttp)
  if (problem !== undefined) {
    fail(path, `${problem}; keycloak() builds its jwksUri from it`, issuer, { show: 'url' })
  }
}

/** What an issuer entry says about its tokens' claims: `undefined` when nothing. */
type IssuerClaimOptions = Pick<ClaimRules, 'readers' | 'withoutAudience' | 'accessTokenClaims'> & {
  readonly audiences: ReadonlySet<string> | undefined
}

function claimNames(value: unknown, path: string): readonly string[] | undefined {
  if (value === undefined) return undefined
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    value.some((name) => typeof name !== 'string' || !CLAIM_NAME.test(name))
  ) {
    fail(path, 'must be a non-empty array of claim names', value)
  }
  return Object.freeze([...value])
}

function issuerClaimOptions(
  entry: Record<string, unknown>,
  path: string,
): IssuerClaimOptions | undefined {
  const { audience, withoutAudience, accessTokenClaims, claims } = entry
  if (
    audience === undefined &&
    withoutAudience === undefined &&
    accessTokenClaims === undefined &&
    claims === undefined
  ) {
    return undefined
  }
  let clientIds: ReadonlySet<string> | undefined
  if (withoutAudience !== undefined) {
    const { clientIds: list } = record(withoutAudience, `${path}.withoutAudience`, ['clientIds'])
    clientIds = new Set(stringList(list, `${path}.withoutAudience.clientIds`, false))
    if (accessTokenClaims === undefined) {
      fail(
        `${path}.withoutAudience`,
        'needs accessTokenClaims (e.g. { token_use: "access" }): without an aud, only such a claim tells an access token from an ID token of the same client',
      )
    }
  }
  let marks: IssuerClaimOptions['accessTokenClaims']
  if (accessTokenClaims !== undefined) {
    const names = isRecord(accessTokenClaims) ? Object.keys(accessTokenClaims) : []
    if (
      names.length === 0 ||
      names.some(
        (name) =>
          !CLAIM_NAME.test(name) ||
          typeof (accessTokenClaims as Record<string, unknown>)[name] !== 'string',
      )
    ) {
      fail(
        `${path}.accessTokenClaims`,
        'must be an object of claim names and their string values',
        accessTokenClaims,
      )
    }
    marks = Object.freeze(
      names.map((name) =>
        Object.freeze([
          name,
          (accessTokenClaims as Record<string, string>)[name] as string,
        ] as const),
      ),
    )
  }
  let readers: IssuerClaimOptions['readers']
  if (claims !== undefined) {
    const mapping = record(claims, `${path}.claims`, MAPPING_KEYS)
    const scopes = claimNames(mapping.scopes, `${path}.claims.scopes`)
    const roles = claimNames(mapping.roles, `${path}.claims.roles`)
    const clientId = claimNames(mapping.clientId, `${path}.claims.clientId`)
    readers = createClaimReaders({
      ...(scopes && { scopes }),
      ...(roles && { roles }),
      ...(clientId && { clientId }),
    })
  }
  return {
    audiences:
      audience === undefined ? undefined : new Set(stringList(audience, `${path}.audience`, false)),
    ...(clientIds && { withoutAudience: clientIds }),
    ...(marks && { accessTokenClaims: marks }),
    ...(readers && { readers }),
  }
}

/**
 * Each issuer's own claim rules: the gate's, with what the entry (a provider profile) changes.
 * Only issuers that change something are listed; the others use the gate's rules as they are.
 */
function rulesByIssuer(
  issuers: readonly { issuer: string; own: IssuerClaimOptions | undefined }[],
  rules: ClaimRules,
): ReadonlyMap<string, ClaimRules> | undefined {
  const byIssuer = new Map<string, ClaimRules>()
  for (const { issuer, own } of issuers) {
    if (own === undefined) continue
    const { audiences, ...rest } = own
    byIssuer.set(
      issuer,
      Object.freeze({ ...rules, ...rest, audiences: audiences ?? rules.audiences }),
    )
  }
  return byIssuer.size === 0 ? undefined : byIssuer
}

function normalizeIssuers(
  value: unknown,
  allowInsecureHttp: boolean,
): { issuer: NormalizedIssuer; own: IssuerClaimOptions | undefined }[] {
  if (!Array.isArray(value) || value.length === 0) {
    fail('issuers', 'must be a non-empty array of { issuer, jwksUri } (see keycloak())', value)
  }
  const seen = new Set<string>()
  return value.map((entry: unknown, index) => {
    const path = `issuers[${index}]`
    const fields = record(entry, path, ISSUER_ENTRY_KEYS)
    const { issuer, jwksUri, discovery, realm } = fields
    if (typeof issuer !== 'string' || issuer.length === 0) {
      fail(`${path}.issuer`, 'must be the exact `iss` string', issuer, { show: 'url' })
    }
    if (seen.has(issuer)) fail(`${path}.issuer`, 'is listed twice', issuer, { show: 'url' })
    seen.add(issuer)
    if (discovery !== undefined && typeof discovery !== 'boolean') {
      fail(`${path}.discovery`, 'must be a boolean', discovery)
    }
    if (realm !== undefined && (typeof realm !== 'string' || realm === '')) {
      fail(`${path}.realm`, 'must be a non-empty string', realm)
    }
    if ((jwksUri === undefined) === (discovery !== true)) {
      fail(path, 'needs exactly one of jwksUri or discovery: true')
    }
    if (jwksUri !== undefined && typeof jwksUri !== 'string') {
      fail(`${path}.jwksUri`, 'must be a URL string', jwksUri)
    }
    if (discovery === true) keyUrl(issuer, `${path}.issuer`, allowInsecureHttp)
    if (jwksUri !== undefined && isKeycloakKeyUrl(issuer, jwksUri)) {
      keycloakIssuerUrl(issuer, `${path}.issuer`, allowInsecureHttp)
    }
    const normalized: NormalizedIssuer = Object.freeze({
      issuer,
      jwksUri:
        jwksUri === undefined ? undefined : keyUrl(jwksUri, `${path}.jwksUri`, allowInsecureHttp),
      discovery: discovery === true,
      realm: realmOf({ issuer, ...(typeof realm === 'string' ? { realm } : {}) }),
      introspection: normalizeIntrospection(fields.introspection, path, {
        issuer,
        jwksUri: jwksUri as string | undefined,
        discovery: discovery === true,
      }),
    })
    return { issuer: normalized, own: issuerClaimOptions(fields, path) }
  })
}

function stringList(value: unknown, path: string, allowEmpty: boolean): string[] {
  const list = typeof value === 'string' ? [value] : value
  if (
    !Array.isArray(list) ||
    (!allowEmpty && list.length === 0) ||
    list.some((item) => typeof item !== 'string' || item === '')
  ) {
    fail(
      path,
      allowEmpty ? 'must be an array of strings' : 'must be a non-empty string or array of strings',
      value,
    )
  }
  return list as string[]
}

function normalizeAlgorithms(value: unknown): readonly JWSAlgorithm[] {
  if (value === undefined) return DEFAULT_ALGORITHMS
  const list = stringList(value, 'algorithms', false)
  for (const alg of list) {
    if (!isJWSAlgorithm(alg)) {
      // RFC 8725 §3.1–3.2: `none` and shared-secret HMAC must never verify a bearer token here.
      fail(
        'algorithms',
        'may only list RS256/384/512, PS256/384/512, ES256/384/512 and EdDSA',
        alg,
        { show: true },
      )
    }
  }
  return Object.freeze([...new Set(list as JWSAlgorithm[])])
}

const TOKEN_CHARSET = /^[\x20\x21\x23-\x5B\x5D-\x7E]+$/

const cacheSchema = group<CacheOptions>()(
  {
    maxEntries: int({ min: 1, max: 1_000_000, fallback: 5000 }),
    maxTtlSeconds: int({ min: 1, max: 86_400, fallback: 300 }),
  },
  { doc: { type: 'CacheOptions' } },
)

/** The schema of {@link GateOptions}: rules, defaults and the reference table. */
export const gateSchema = group<GateOptions>()(
  {
    issuers: custom((value) => value, {
      accepts:
        'keycloak(), a provider profile, or { issuer, jwksUri } / { issuer, discovery: true } entries',
      default: 'required',
      see: 'providers/generic-oidc.md',
    }),
    audience: custom((value) => value, {
      accepts: 'string or strings',
      default: 'required, unless every issuer entry has its own',
    }),
    algorithms: custom(normalizeAlgorithms, {
      accepts: 'RS/PS/ES 256/384/512, EdDSA',
      default: "['RS256', 'PS256', 'ES256', 'EdDSA']",
    }),
    realm: custom(
      (realm = 'api', path) => {
        if (typeof realm !== 'string' || !TOKEN_CHARSET.test(realm)) {
          // The realm is sent to every client in the challenge: never a secret, so it is shown.
          fail(path, 'must be a non-empty string of printable ASCII without " or \\', realm, {
            show: true,
          })
        }
        return realm
      },
      { accepts: 'printable ASCII without " or \\', default: "'api'" },
    ),
    clockToleranceSeconds: int({ min: 0, max: 300, fallback: 5 }),
    maxTokenAgeSeconds: int({ min: 1, max: 31_536_000, optional: true }),
    // Revocation entries expire once no token they match can still be valid: with revocation on,
    // every token needs a bounded lifetime, a day unless set.
    maxTokenLifetimeSeconds: custom(
      (value, path, { revocationOn }) =>
        value === undefined && !revocationOn
          ? undefined
          : integer(value, path, { fallback: 86_400, min: 1, max: 31_536_000 }),
      { accepts: 'integer 1–31 536 000', default: 'none; 86400 with revocation' },
    ),
    requiredClaims: custom(
      (value, path) => Object.freeze(value === undefined ? [] : stringList(value, path, true)),
      { accepts: 'claim names', default: '[]' },
    ),
    tokenProfile: choice(['access', 'keycloak', 'rfc9068']),
    allowedClientIds: custom(
      (value, path) => (value === undefined ? undefined : new Set(stringList(value, path, false))),
      { accepts: 'client ids', default: 'any client' },
    ),
    maxTokenBytes: int({ min: 256, max: 65_536, fallback: 8192 }),
    credentialsRequired: flag(true),
    skip: fn<(request: RequestLike) => boolean>('(request) => boolean'),
    errorHandling: choice(['respond', 'framework']),
    jwks: group<JWKSOptions>()(
      {
        timeoutMs: int({ min: 1, max: 60_000, fallback: 5000 }),
        cooldownMs: int({ min: 0, max: 3_600_000, fallback: 30_000 }),
        minCooldownMs: custom(
          (value, path, { cooldownMs }) => {
            const cooldown = cooldownMs as number
            const min = integer(value, path, {
              fallback: Math.min(500, cooldown),
              min: 0,
              max: 3_600_000,
            })
            if (min > cooldown) fail(path, `must not exceed jwks.cooldownMs (${cooldown})`, min)
            return min
          },
          { accepts: 'integer 0–cooldownMs', default: '500' },
        ),
        maxAgeMs: int({ min: 1000, max: 86_400_000, fallback: 600_000 }),
        staleIfErrorMs: int({ min: 0, max: 604_800_000, fallback: 3_600_000 }),
        maxBodyBytes: int({ min: 1024, max: 16_777_216, fallback: 262_144 }),
        allowInsecureHttp: flag(false),
        fetch: custom(
          (value, path) =>
            optionalFunction<typeof globalThis.fetch>(value, path, 'compatible with fetch') ??
            ((...args: Parameters<typeof fetch>) => globalThis.fetch(...args)),
          { accepts: 'function compatible with fetch', default: 'global fetch' },
        ),
      },
      { doc: { type: 'JWKSOptions' } },
    ),
    cache: {
      ...cacheSchema,
      read: (value, path, seen) =>
        value === false ? undefined : cacheSchema.read(value, path, seen),
    },
    tenant: custom((value) => (value === undefined ? undefined : normalizeTenantOptions(value)), {
      accepts: '{ from, claim, idPattern, planClaim, policy }',
      see: 'reference/tenant-options.md',
    }),
    rateLimit: custom(
      (value) => (value === undefined ? undefined : normalizeRateLimitOptions(value)),
      { accepts: 'windows or plans, store, …', see: 'reference/rate-limit-options.md' },
    ),
    revocation: custom(
      (value, _path, { maxTokenLifetimeSeconds }) =>
        value === undefined
          ? undefined
          : normalizeRevocationOptions(value, maxTokenLifetimeSeconds as number),
      { accepts: 'store, callbacks, load, …', see: 'reference/revocation-options.md' },
    ),
    onEvent: fn<GateEventListener>('(event) => void'),
    dpop: custom(normalizeDpopOptions, {
      accepts: 'mode, publicBaseUrl or allowedHosts, replay, nonce, …',
      default: "mode 'off'",
      see: 'reference/dpop-options.md',
    }),
    mtls: custom(normalizeMtlsOptions, {
      accepts: 'mode, trustedProxies',
      default: 'off: certificate-bound tokens refused',
      see: 'mtls.md#options',
    }),
    statusList: custom(normalizeStatusListOptions, {
      accepts:
        'required, allowedUriPrefixes, minCacheSeconds, maxCacheSeconds, staleIfErrorSeconds, …',
      default: 'off: the status claim is not read',
      see: 'status-list.md',
    }),
    delegation: custom(normalizeDelegationOptions, {
      accepts: 'allowedActors, maxChainDepth, exchange',
      default: 'any well-formed chain admitted; tokenFor unavailable',
      see: 'token-exchange.md',
    }),
    resourceMetadata: custom(normalizeResourceMetadataOptions, {
      accepts: '{ resource, scopesSupported?, authorizationServers?, extra? }',
      see: 'product-backends.md#protected-resource-metadata-rfc-9728-and-mcp-servers',
    }),
  },
  {
    absent: 'required',
    before: (input) => {
      if (input['rateLimit'] !== undefined && input['tenant'] === undefined) {
        fail('rateLimit', 'needs "tenant": limits are per tenant')
      }
      return { revocationOn: input['revocation'] !== undefined }
    },
    // Every option not named here passes through as read (`realm`, read by the gate's refusal
    // point only; `dpop`, `undefined` when off; the stores…), so an option added to the schema
    // reaches the gate without a line here.
    finish: ({
      issuers: entries,
      audience,
      jwks,
      onEvent: _listener,
      clockToleranceSeconds,
      maxTokenAgeSeconds,
      maxTokenLifetimeSeconds,
      requiredClaims,
      tokenProfile,
      allowedClientIds,
      ...settings
    }) => {
      const issuers = normalizeIssuers(entries, jwks.allowInsecureHttp)
      // Issuers that name their own audience (or accept none, with a client allow-list) need no
      // gate-wide one; any other issuer does.
      const audienceNeeded =
        audience !== undefined ||
        issuers.some(
          ({ own }) => own?.audiences === undefined && own?.withoutAudience === undefined,
        )
      const rules: ClaimRules = {
        audiences: audienceNeeded
          ? new Set(stringList(audience, 'audience', false))
          : new Set<string>(),
        clockToleranceSeconds,
        maxTokenAgeSeconds,
        maxTokenLifetimeSeconds,
        requiredClaims,
        tokenProfile,
        allowedClientIds,
      }
      const byIssuer = rulesByIssuer(
        issuers.map(({ issuer, own }) => ({ issuer: issuer.issuer, own })),
        rules,
      )
      return Object.freeze({
        ...settings,
        issuers: Object.freeze(issuers.map(({ issuer }) => issuer)),
        claims: Object.freeze(
          byIssuer === undefined ? rules : { ...rules, byIssuer },
        ) as ClaimRules,
        jwks: jwks as NormalizedJWKSOptions,
      })
    },
  },
)

/** Everything `createGate()` needs, validated, defaulted and frozen. */
export type NormalizedOptions = Normalized<typeof gateSchema>

/**
 * Validates and completes {@link GateOptions}, `tenant` and `rateLimit` included (by their own
 * modules' normalizers, called from the schema).
 *
 * @throws TypeError naming the option and what to change.
 */
export function normalizeOptions(input: GateOptions): NormalizedOptions {
  if (!isRecord(input)) {
    throw new TypeError(
      'createGate(options): "options" must be an object with issuers and audience',
    )
  }
  return gateSchema.read(input, 'options', {})
}
