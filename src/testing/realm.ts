/**
 * What the test issuer holds per realm (keys, faults, counters) and the documents it serves.
 *
 * @module
 */
import type { TestIssuerFault } from './faults.js'
import type { Reply } from './http.js'
import type { TestAlgorithm, TestKey } from './keys.js'
import type { StatusListState } from './status-lists.js'

/** Lifetime of minted and issued access tokens, in seconds (Keycloak's default lifespan). */
export const ACCESS_TOKEN_SECONDS = 300

/** The endpoints whose behaviour tests can change. */
export type FaultEndpoint = 'certs' | 'discovery'

export interface RealmState {
  readonly name: string
  /** `{url}/realms/{name}`, or the `issuer` of an entry of the `issuers` option. */
  readonly issuer: string
  /** Where the discovery document says the keys and the token endpoint are. */
  readonly jwksUri: string
  readonly tokenEndpoint: string
  /** Keycloak's, named in a realm's discovery document (not served); none for the others. */
  readonly authorizationEndpoint: string | undefined
  /** The key minted with, per algorithm. */
  readonly current: Map<TestAlgorithm, TestKey>
  /** The keys the certs endpoint publishes, by kid, in publication order. */
  readonly published: Map<string, TestKey>
  readonly faults: Record<FaultEndpoint, TestIssuerFault | undefined>
  /** Served by the certs endpoint instead of the real set, while set. */
  certsOverride: Reply | undefined
  certsCount: number
  discoveryCount: number
  /** The Token Status Lists served at `{issuer}/statuslists/{name}`, by name. */
  readonly statusLists: Map<string, StatusListState>
}

/** The URLs an issuer at a path other than Keycloak's names (the `issuers` option). */
export interface IssuerShape {
  readonly issuer: string
  readonly jwksUri: string
  readonly tokenEndpoint: string
}

export function createRealmState(name: string, url: string, shape?: IssuerShape): RealmState {
  const issuer = shape?.issuer ?? `${url}/realms/${name}`
  return {
    name,
    issuer,
    jwksUri: shape?.jwksUri ?? jwksUriOf(issuer),
    tokenEndpoint: shape?.tokenEndpoint ?? `${issuer}/protocol/openid-connect/token`,
    authorizationEndpoint: shape ? undefined : `${issuer}/protocol/openid-connect/auth`,
    current: new Map(),
    published: new Map(),
    faults: { certs: undefined, discovery: undefined },
    certsOverride: undefined,
    certsCount: 0,
    discoveryCount: 0,
    statusLists: new Map(),
  }
}

/** Publishes `key` and makes it the one minted with for its algorithm. */
export function addKey(realm: RealmState, key: TestKey): void {
  realm.published.set(key.kid, key)
  realm.current.set(key.alg, key)
}

export function jwksUriOf(issuer: string): string {
  return `${issuer}/protocol/openid-connect/certs`
}

/** The published JWKS, as fresh objects callers may change. */
export function jwksDocument(realm: RealmState): { keys: Record<string, unknown>[] } {
  return { keys: Array.from(realm.published.values(), (key) => ({ ...key.publicJwk })) }
}

/** The OpenID Provider Metadata (OpenID Connect Discovery 1.0 §3) of the realm. */
export function discoveryDocument(realm: RealmState): Record<string, unknown> {
  return {
    issuer: realm.issuer,
    ...(realm.authorizationEndpoint && { authorization_endpoint: realm.authorizationEndpoint }),
    token_endpoint: realm.tokenEndpoint,
    jwks_uri: realm.jwksUri,
    // Only what the token endpoint really implements.
    grant_types_supported: ['client_credentials'],
    response_types_supported: ['code'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [...realm.current.keys()],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
  }
}
