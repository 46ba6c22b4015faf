/**
 * Options of the test issuer: their types and their schema (defaults, validation, the reference
 * table).
 *
 * @module
 */
import { custom, group, type Normalized } from '../options-kit.js'
import { isTestAlgorithm, type TestAlgorithm } from './keys.js'

/** A confidential client the token endpoint accepts for the `client_credentials` grant. */
export interface TestClient {
  readonly clientId: string
  readonly clientSecret: string
  /** `aud` of its tokens. Default: the issuer's `audience`. */
  readonly audience?: string | readonly string[] | undefined
  /** `scope` of its tokens. Default: `'profile email'`, as Keycloak grants service accounts. */
  readonly scope?: string | undefined
  /** Put in the `tenant` claim of its tokens when set. */
  readonly tenant?: string | undefined
}

/**
 * An issuer served at a path of its own beside the realms, shaped as another provider's: Okta's
 * `/oauth2/default` with keys at `v1/keys`, Auth0's `/` with keys at `.well-known/jwks.json`.
 * Its discovery document is at `{path}/.well-known/openid-configuration` (at
 * `/.well-known/openid-configuration` for `/`); `name` selects it wherever a realm is selected
 * (`mint({}, { realm: name })`, `fetchCount(name)`, `rotate({ realm: name })`…). With the
 * provider's own `issuer`, its tokens carry that `iss` and a gate built by the provider's profile
 * verifies them once its `jwks.fetch` sends the provider's host here (docs/testing.md, "Tokens
 * shaped like Auth0, Entra, Okta and Cognito").
 *
 * @example
 * ```ts
 * const pool = 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf123'
 * const issuer = await createTestIssuer({
 *   issuers: [{ name: 'cognito', issuer: pool, jwksPath: '.well-known/jwks.json' }],
 * })
 * // A Cognito access token: the kit's Keycloak defaults it lacks left out with `undefined`.
 * const token = await issuer.mint(
 *   { aud: undefined, azp: undefined, typ: undefined, client_id: 'app-1', token_use: 'access' },
 *   { realm: 'cognito', header: { typ: undefined } },
 * )
 * ```
 */
export interface TestPathIssuer {
  /** Its name, distinct from the realms' (letters, digits, `-`, `_`, `.`, `~`). */
  readonly name: string
  /** Where it is served on the issuer's port, e.g. `'/oauth2/default'`. Default: the path of `issuer`. */
  readonly path?: string | undefined
  /**
   * The issuer it names: `iss` of its tokens, `issuer` of its discovery document, the base of the
   * `jwks_uri` and `token_endpoint` it lists. Default `{url}{path}`. A provider's own address
   * (`'https://acme.okta.com/oauth2/default'`) makes it pose as that provider for a client whose
   * `fetch` sends that host to this issuer.
   */
  readonly issuer?: string | undefined
  /** Its key set, relative to `path`. Default `'protocol/openid-connect/certs'`. */
  readonly jwksPath?: string | undefined
  /** Its `client_credentials` token endpoint, relative to `path`. Default `'protocol/openid-connect/token'`. */
  readonly tokenPath?: string | undefined
}

/** Options of {@link createTestIssuer}. Every one is optional. */
export interface TestIssuerOptions {
  /**
   * Realm names (letters, digits, `-`, `_`, `.`, `~`). Default `['test']`; the first is the
   * default realm.
   */
  readonly realms?: readonly string[] | undefined
  /**
   * One signing key per algorithm per realm is generated at start. Default `['RS256']`; the first
   * is the algorithm `mint()` signs with unless told otherwise.
   */
  readonly algorithms?: readonly TestAlgorithm[] | undefined
  /** Default `aud` of minted tokens. Default `'api'`. */
  readonly audience?: string | readonly string[] | undefined
  /**
   * Clients the Client Credentials token endpoint (`{issuer}/protocol/openid-connect/token`)
   * accepts, each with its secret, by HTTP Basic or form: a token for its service account (`sub`
   * `service-account-{clientId}`, `azp` and `client_id` the client, its `audience`, `scope` and
   * `tenant`), valid 300 s, no refresh token. Default: none.
   */
  readonly clients?: readonly TestClient[] | undefined
  /** Issuers at paths of their own, beside the realms (each with its own keys). Default: none. */
  readonly issuers?: readonly TestPathIssuer[] | undefined
  /** Port on 127.0.0.1. Default `0`: a free port, chosen once and kept across stop and start. */
  readonly port?: number | undefined
}

/** A {@link TestPathIssuer} checked, its paths normalized. */
export interface NormalizedPathIssuer {
  readonly name: string
  /** Begins with `/`, ends without one except for `/` itself. */
  readonly path: string
  readonly issuer: string | undefined
  readonly jwksPath: string
  readonly tokenPath: string
}

// RFC 3986 unreserved characters, so a realm is its own path segment; '.' and '..' would be
// resolved away by URL parsers.
const REALM_NAME = /^(?!\.\.?$)[A-Za-z0-9._~-]+$/
// Segments of unreserved characters, none of them '.' or '..'.
const SEGMENTS = /^(?:(?!\.\.?(?:\/|$))[A-Za-z0-9._~-]+(?:\/|$))+$/
const DISCOVERY_PATH = '.well-known/openid-configuration'

function fail(option: string, expected: string): never {
  throw new TypeError(`createTestIssuer(): "${option}" must be ${expected}`)
}

function isStringList(value: unknown): value is readonly string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string')
}

function isAudience(value: unknown): value is string | readonly string[] {
  return typeof value === 'string' || isStringList(value)
}

function isDistinct(values: readonly unknown[]): boolean {
  return new Set(values).size === values.length
}

function normalizeClient(client: TestClient, index: number): TestClient {
  const path = `clients[${index}]`
  if (typeof client !== 'object' || client === null) fail(path, 'an object')
  if (typeof client.clientId !== 'string' || client.clientId === '') {
    fail(`${path}.clientId`, 'a non-empty string')
  }
  if (typeof client.clientSecret !== 'string') fail(`${path}.clientSecret`, 'a string')
  if (client.audience !== undefined && !isAudience(client.audience)) {
    fail(`${path}.audience`, 'a string or an array of strings')
  }
  if (client.scope !== undefined && typeof client.scope !== 'string') {
    fail(`${path}.scope`, 'a string')
  }
  if (client.tenant !== undefined && typeof client.tenant !== 'string') {
    fail(`${path}.tenant`, 'a string')
  }
  return Object.freeze({ ...client })
}

function relativePath(value: unknown, option: string, fallback: string): string {
  if (value === undefined) return fallback
  if (typeof value !== 'string' || value.endsWith('/') || !SEGMENTS.test(value)) {
    fail(option, 'a relative path of segments (letters, digits, "-_.~"), e.g. "v1/keys"')
  }
  return value
}

function normalizePathIssuer(entry: TestPathIssuer, index: number): NormalizedPathIssuer {
  const at = `issuers[${index}]`
  if (typeof entry !== 'object' || entry === null) fail(at, 'an object')
  const known = ['name', 'path', 'issuer', 'jwksPath', 'tokenPath']
  for (const key of Object.keys(entry)) {
    if (!known.includes(key))
      fail(`${at}.${key.slice(0, 64)}`, `absent; the options are ${known.join(', ')}`)
  }
  if (typeof entry.name !== 'string' || !REALM_NAME.test(entry.name)) {
    fail(`${at}.name`, 'a name (letters, digits, "-_.~")')
  }
  let issuerPath: string | undefined
  if (entry.issuer !== undefined) {
    const url =
      typeof entry.issuer === 'string' && URL.canParse(entry.issuer)
        ? new URL(entry.issuer)
        : undefined
    if (!url || !/^https?:$/.test(url.protocol) || url.search || url.hash || url.username) {
      fail(`${at}.issuer`, 'an http(s) URL without query, fragment or credentials')
    }
    issuerPath = url.pathname
  }
  const path = entry.path ?? issuerPath
  if (
    typeof path !== 'string' ||
    !path.startsWith('/') ||
    (path !== '/' && !SEGMENTS.test(path.slice(1))) ||
    /^\/realms(?:\/|$)/.test(path)
  ) {
    fail(
      `${at}.path`,
      'an absolute path of segments outside /realms, e.g. "/oauth2/default" or "/" (or give "issuer")',
    )
  }
  const jwksPath = relativePath(entry.jwksPath, `${at}.jwksPath`, 'protocol/openid-connect/certs')
  const tokenPath = relativePath(
    entry.tokenPath,
    `${at}.tokenPath`,
    'protocol/openid-connect/token',
  )
  if (!isDistinct([jwksPath, tokenPath, DISCOVERY_PATH])) {
    fail(`${at}`, `an issuer whose jwksPath, tokenPath and ${DISCOVERY_PATH} differ`)
  }
  return Object.freeze({
    name: entry.name,
    path: path === '/' ? path : path.replace(/\/$/, ''),
    issuer: entry.issuer,
    jwksPath,
    tokenPath,
  })
}

/** The schema of {@link TestIssuerOptions}: rules, defaults and the reference table. */
export const testIssuerSchema = group<TestIssuerOptions>()(
  {
    realms: custom(
      (realms = ['test'], path) => {
        if (
          !isStringList(realms) ||
          realms.length === 0 ||
          !realms.every((realm) => REALM_NAME.test(realm)) ||
          !isDistinct(realms)
        ) {
          fail(path, 'a non-empty array of distinct realm names (letters, digits, "-_.~")')
        }
        return Object.freeze([...realms])
      },
      { accepts: 'realm names', default: "['test']" },
    ),
    algorithms: custom(
      (algorithms = ['RS256'], path) => {
        if (
          !Array.isArray(algorithms) ||
          algorithms.length === 0 ||
          !algorithms.every(isTestAlgorithm) ||
          !isDistinct(algorithms)
        ) {
          fail(path, 'a non-empty array of distinct TestAlgorithm names')
        }
        return Object.freeze([...algorithms]) as readonly TestAlgorithm[]
      },
      { accepts: 'TestAlgorithm names', default: "['RS256']" },
    ),
    audience: custom(
      (audience = 'api', path) => {
        if (!isAudience(audience)) fail(path, 'a string or an array of strings')
        return typeof audience === 'string' ? audience : Object.freeze([...audience])
      },
      { accepts: 'string or strings', default: "'api'" },
    ),
    clients: custom(
      (clients = [], path) => {
        if (!Array.isArray(clients)) fail(path, 'an array')
        const normalized = clients.map(normalizeClient)
        if (!isDistinct(normalized.map((client) => client.clientId))) {
          fail(path, 'clients with distinct clientIds')
        }
        return new Map(normalized.map((client) => [client.clientId, client]))
      },
      { accepts: '[{ clientId, clientSecret, audience?, scope?, tenant? }]', default: '[]' },
    ),
    issuers: custom(
      (issuers = [], path, { realms }) => {
        if (!Array.isArray(issuers)) fail(path, 'an array')
        const pathIssuers = issuers.map(normalizePathIssuer)
        const names = [...(realms as string[]), ...pathIssuers.map((entry) => entry.name)]
        if (!isDistinct(names)) fail(path, "issuers with distinct names, none of them a realm's")
        if (!isDistinct(pathIssuers.map((entry) => entry.path))) {
          fail(path, 'issuers at distinct paths')
        }
        return Object.freeze(pathIssuers)
      },
      { accepts: '[{ name, path?, issuer?, jwksPath?, tokenPath? }]', default: '[]' },
    ),
    port: custom(
      (port = 0, path) => {
        if (!Number.isInteger(port) || (port as number) < 0 || (port as number) > 65_535) {
          fail(path, 'an integer 0-65535')
        }
        return port as number
      },
      { accepts: 'integer 0–65 535', default: '0' },
    ),
  },
  { open: true },
)

/** {@link TestIssuerOptions} with every default filled in and every value checked. */
export type NormalizedTestIssuerOptions = Normalized<typeof testIssuerSchema>

/** Fills in defaults; throws a `TypeError` naming the first invalid option. */
export function normalizeTestIssuerOptions(
  options: TestIssuerOptions = {},
): NormalizedTestIssuerOptions {
  if (typeof options !== 'object' || options === null) fail('options', 'an object')
  return testIssuerSchema.read(options, 'options', {})
}
