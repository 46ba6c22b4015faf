/**
 * Options of the test issuer: their types, defaults and validation.
 *
 * @module
 */
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
  /** Clients the token endpoint accepts. Default: none. */
  readonly clients?: readonly TestClient[] | undefined
  /** Port on 127.0.0.1. Default `0`: a free port, chosen once and kept across stop and start. */
  readonly port?: number | undefined
}

/** {@link TestIssuerOptions} with every default filled in and every value checked. */
export interface NormalizedTestIssuerOptions {
  readonly realms: readonly string[]
  readonly algorithms: readonly TestAlgorithm[]
  readonly audience: string | readonly string[]
  readonly clients: ReadonlyMap<string, TestClient>
  readonly port: number
}

// RFC 3986 unreserved characters, so a realm is its own path segment; '.' and '..' would be
// resolved away by URL parsers.
const REALM_NAME = /^(?!\.\.?$)[A-Za-z0-9._~-]+$/

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

/** Fills in defaults; throws a `TypeError` naming the first invalid option. */
export function normalizeTestIssuerOptions(
  options: TestIssuerOptions = {},
): NormalizedTestIssuerOptions {
  if (typeof options !== 'object' || options === null) fail('options', 'an object')
  const {
    realms = ['test'],
    algorithms = ['RS256'],
    audience = 'api',
    clients = [],
    port = 0,
  } = options
  if (
    !isStringList(realms) ||
    realms.length === 0 ||
    !realms.every((realm) => REALM_NAME.test(realm)) ||
    !isDistinct(realms)
  ) {
    fail('realms', 'a non-empty array of distinct realm names (letters, digits, "-_.~")')
  }
  if (
    !Array.isArray(algorithms) ||
    algorithms.length === 0 ||
    !algorithms.every(isTestAlgorithm) ||
    !isDistinct(algorithms)
  ) {
    fail('algorithms', 'a non-empty array of distinct TestAlgorithm names')
  }
  if (!isAudience(audience)) fail('audience', 'a string or an array of strings')
  if (!Array.isArray(clients)) fail('clients', 'an array')
  const normalizedClients = clients.map(normalizeClient)
  if (!isDistinct(normalizedClients.map((client) => client.clientId))) {
    fail('clients', 'clients with distinct clientIds')
  }
  if (!Number.isInteger(port) || port < 0 || port > 65_535) fail('port', 'an integer 0-65535')
  return Object.freeze({
    realms: Object.freeze([...realms]),
    algorithms: Object.freeze([...algorithms]),
    audience: typeof audience === 'string' ? audience : Object.freeze([...audience]),
    clients: new Map(normalizedClients.map((client) => [client.clientId, client])),
    port,
  })
}
