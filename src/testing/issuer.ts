/**
 * `createTestIssuer()`: a Keycloak-shaped OpenID provider on loopback, for tests, demos and
 * benchmarks.
 *
 * @module
 */
import { randomUUID, type webcrypto, X509Certificate } from 'node:crypto'
import { validateHeaderValue } from 'node:http'

import { certificateThumbprint } from '../binding/certificate.js'
import { checkFault, type TestIssuerFault } from './faults.js'
import { isFinalStatus, listenOnLoopback } from './http.js'
import {
  generateTestKey,
  isTestAlgorithm,
  signCompactJWS,
  type TestAlgorithm,
  type TestKey,
} from './keys.js'
import {
  type NormalizedPathIssuer,
  normalizeTestIssuerOptions,
  type TestIssuerOptions,
} from './options.js'
import {
  ACCESS_TOKEN_SECONDS,
  addKey,
  createRealmState,
  type FaultEndpoint,
  jwksDocument,
  jwksUriOf,
  type RealmState,
} from './realm.js'
import { createRequestHandler, type PathRoute } from './routes.js'
import {
  StatusListState,
  statusListReply,
  type TestStatusList,
  type TestStatusListOptions,
} from './status-lists.js'
import { handleTokenRequest } from './token.js'

/** Options of {@link TestIssuer.mint}. */
export interface MintOptions {
  /** Realm (or name of an `issuers` entry) whose issuer and key are used. Default: the first realm. */
  readonly realm?: string | undefined
  /**
   * `alg` of the header. Default: the algorithm of `kid` when given, else the first configured
   * algorithm. Without `kid`, the realm's current key for this algorithm signs; with `kid`, that
   * key signs with its own algorithm whatever this says.
   */
  readonly alg?: TestAlgorithm | undefined
  /** Sign with this key (of any realm, published or not); the header names it too. */
  readonly kid?: string | undefined
  /** Header parameters merged over `{ alg, typ: 'JWT', kid }`; `undefined` removes one. */
  readonly header?: Readonly<Record<string, unknown>> | undefined
  /** `exp` − `iat`, in seconds. Default 300. A `claims.exp` wins over it. */
  readonly expiresInSeconds?: number | undefined
  /**
   * Bind the token to this DPoP key (`createDpopKey()`): adds `cnf: { jkt }` (RFC 9449 §6.1).
   * A `claims.cnf` wins over it.
   */
  readonly dpop?: { readonly jkt: string } | undefined
  /**
   * Bind the token to this client certificate (PEM text, DER bytes or an `X509Certificate`): adds
   * `cnf: { "x5t#S256": … }` (RFC 8705 §3.1), beside `jkt` when `dpop` is given too. A
   * `claims.cnf` wins over it.
   */
  readonly certificate?: string | Uint8Array | X509Certificate | undefined
}

const MINT_OPTIONS = ['realm', 'alg', 'kid', 'header', 'expiresInSeconds', 'dpop', 'certificate']

/** `cnf` of a minted token: the DPoP key's thumbprint and the certificate's, when given. */
function confirmationOf(options: MintOptions): Record<string, string> | undefined {
  const { dpop, certificate } = options
  if (dpop === undefined && certificate === undefined) return undefined
  let x5t: string | undefined
  if (certificate !== undefined) {
    let parsed: X509Certificate
    try {
      parsed =
        certificate instanceof X509Certificate
          ? certificate
          : new X509Certificate(
              typeof certificate === 'string' ? certificate : Buffer.from(certificate),
            )
    } catch (error) {
      throw new TypeError(
        'mint(claims, options): "certificate" must be a certificate: PEM text, DER bytes or an X509Certificate',
        { cause: error },
      )
    }
    x5t = certificateThumbprint(parsed)
  }
  return withoutUndefined({ jkt: dpop?.jkt, 'x5t#S256': x5t }) as Record<string, string>
}
const LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout'
const LOGOUT_TOKEN_SECONDS = 120

/**
 * Option names of JWT libraries (jsonwebtoken, jose) and of `mint()` itself, and the claim each
 * one means. Passed as claims they would silently become custom claims, and a test would pass
 * for the wrong reason (a token "for audience office" that has no office `aud`).
 */
const OPTION_NAMES_AS_CLAIMS: ReadonlyMap<string, string> = new Map(
  Object.entries({
    audience: 'the claim "aud"',
    issuer: 'the claim "iss"',
    subject: 'the claim "sub"',
    jwtid: 'the claim "jti"',
    jwtId: 'the claim "jti"',
    expiresIn: 'the option expiresInSeconds (second argument), or the claim "exp"',
    expiresInSeconds: 'the option expiresInSeconds in the second argument',
    expiresAt: 'the claim "exp"',
    notBefore: 'the claim "nbf"',
    issuedAt: 'the claim "iat"',
    algorithm: 'the option alg (second argument)',
    keyid: 'the option kid (second argument)',
    keyId: 'the option kid (second argument)',
    noTimestamp: 'the claim iat: undefined',
    realm: 'the option realm (second argument)',
    header: 'the option header (second argument)',
  }),
)

function checkMintArguments(claims: unknown, options: unknown): void {
  if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) {
    throw new TypeError('mint(claims, options): "claims" must be an object of JWT claims')
  }
  for (const name of Object.keys(claims)) {
    const instead = OPTION_NAMES_AS_CLAIMS.get(name)
    if (instead !== undefined) {
      throw new TypeError(
        `mint(claims, options): "${name}" is an option name, not a JWT claim; use ${instead}`,
      )
    }
  }
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError('mint(claims, options): "options" must be an object')
  }
  for (const name of Object.keys(options)) {
    if (!MINT_OPTIONS.includes(name)) {
      const instead = OPTION_NAMES_AS_CLAIMS.get(name)
      throw new TypeError(
        `mint(claims, options): "${name}" is not an option of mint()${instead === undefined ? '' : `; use ${instead}`}; its options are ${MINT_OPTIONS.join(', ')}`,
      )
    }
  }
}

/** Options of {@link TestIssuer.setFault}. */
export interface SetFaultOptions {
  readonly realm?: string | undefined
  /**
   * Only this endpoint. Default: both, except that an `empty-keys` fault leaves the discovery
   * document healthy.
   */
  readonly endpoint?: FaultEndpoint | undefined
}

/** Private key material of one of the issuer's keys. */
export interface TestPrivateKey {
  /** Web Crypto key, extractable; accepted by jose and by `node:crypto`'s `sign()`. */
  readonly key: webcrypto.CryptoKey
  /** Private JWK with `kid`, `alg` and `use`; a fresh copy on every call. */
  readonly jwk: Record<string, unknown>
  readonly alg: TestAlgorithm
}

/** A running test issuer; see {@link createTestIssuer}. */
export interface TestIssuer {
  /** The provider's base URL (Keycloak's auth URL), `http://127.0.0.1:PORT`. */
  readonly url: string
  /** The realm names, the default one first. */
  readonly realms: readonly string[]
  /**
   * `{url}/realms/{realm}`, the `iss` of its tokens. Default realm: the first. Any name works. For
   * the name of an `issuers` entry, that entry's issuer.
   */
  issuer(realm?: string): string
  /**
   * `{issuer}/protocol/openid-connect/certs`; for an `issuers` entry, the `jwks_uri` its discovery
   * document names.
   */
  jwksUri(realm?: string): string
  /**
   * Mints an access token signed by the realm's current key. Default claims: `iss`, `aud` (the
   * `audience` option), `sub: 'user-1'`, `azp: 'test-client'`, `typ: 'Bearer'` (Keycloak puts it
   * in the payload), `scope: 'openid profile email'`, `iat` now, `exp` now + 300 s, a random
   * `jti`. Header: `alg`, `typ: 'JWT'`, `kid`. Given claims override the defaults; a claim set to
   * `undefined` is left out. "Now" is `Date.now()`, so `vi.setSystemTime()` moves it.
   *
   * @throws Error for an unknown realm or kid, or an algorithm the realm has no key for.
   */
  mint(claims?: Readonly<Record<string, unknown>>, options?: MintOptions): Promise<string>
  /**
   * Mints an OpenID Connect Back-Channel Logout token, as a provider POSTs it to the gateway's
   * `backchannelLogout()` endpoint. Default claims: `iss`, `aud` (the `audience` option: the
   * gateway's client id), `sub: 'user-1'`, `iat` now, `exp` now + 120 s, a random `jti`,
   * `events: { 'http://schemas.openid.net/event/backchannel-logout': {} }`, and Keycloak's
   * `typ: 'Logout'`; no `sid` unless given. Header: `alg`, `typ: 'logout+jwt'`, `kid`. Claims and
   * options work as in {@link TestIssuer.mint} (`expiresInSeconds` default 120).
   */
  mintLogoutToken(
    claims?: Readonly<Record<string, unknown>>,
    options?: MintOptions,
  ): Promise<string>
  /**
   * A Token Status List of the realm (draft-ietf-oauth-status-list), created on first use and
   * served at `{issuer}/statuslists/{name}`, signed with the realm's current key: mint tokens
   * naming an index with `mint({ status: list.reference(7) })`, and revoke or suspend one with
   * `list.set(7, 1)` (INVALID) or `list.set(7, 2)` (SUSPENDED). Options apply when the list is
   * created.
   */
  statusList(name?: string, options?: TestStatusListOptions): TestStatusList
  /**
   * Signs exactly `header` and `payload` (an object, or a raw string), adding nothing: the header
   * may lack `alg` or `kid`, or contradict the key. Signs with the key of `options.kid`, else the
   * realm's current key for `header.alg` when it has one, else its current default key.
   */
  sign(
    header: Readonly<Record<string, unknown>>,
    payload: Readonly<Record<string, unknown>> | string,
    options?: { readonly realm?: string | undefined; readonly kid?: string | undefined },
  ): Promise<string>
  /**
   * Generates a key for (realm, alg) and mints with it from now on. The previous key of that
   * algorithm stays published unless `keepPrevious` is `false`. Default alg: the first configured.
   *
   * @returns the new key's `kid`.
   */
  rotate(options?: {
    readonly realm?: string | undefined
    readonly alg?: TestAlgorithm | undefined
    readonly keepPrevious?: boolean | undefined
  }): Promise<string>
  /**
   * Stops publishing a key, so tokens signed with it should be refused. `mint()` keeps signing
   * with it if it is current: `rotate()` first to move on.
   */
  unpublish(kid: string): void
  /** The realm's published JWKS (public members only), as served when no override is set. */
  jwks(realm?: string): { keys: Record<string, unknown>[] }
  /**
   * Serves `body` from the realm's certs endpoint instead of its JWKS: any JSON value, or a
   * string sent as is. `undefined` restores the real set. Defaults: status 200,
   * `application/json`. Faults still take precedence.
   */
  overrideJwks(
    body: unknown,
    options?: {
      readonly realm?: string | undefined
      readonly contentType?: string | undefined
      readonly status?: number | undefined
    },
  ): void
  /** Private key material of any key this issuer generated, published or not. */
  privateKey(kid: string): TestPrivateKey
  /** Makes the realm's certs and discovery endpoints misbehave; `undefined` heals them. */
  setFault(fault: TestIssuerFault | undefined, options?: SetFaultOptions): void
  /** Requests (GET/HEAD, faulted ones included) to the realm's certs endpoint since reset. */
  fetchCount(realm?: string): number
  /** Requests (GET/HEAD, faulted ones included) to the realm's discovery document. */
  discoveryCount(realm?: string): number
  /** Sets every counter of every realm back to 0. */
  resetCounts(): void
  /** Closes the port: connections are refused, open ones are dropped. Keys and state remain. */
  stop(): Promise<void>
  /** Listens again, on the same port. */
  start(): Promise<void>
  /** Stops for good, dropping keep-alive and hanging connections so the process can exit. */
  close(): Promise<void>
}

/** The state of an issuer of the `issuers` option, its three paths added to `paths`. */
function servePathIssuer(
  entry: NormalizedPathIssuer,
  url: string,
  paths: Map<string, PathRoute>,
): RealmState {
  const served = entry.path === '/' ? '/' : `${entry.path}/`
  const issuer = entry.issuer ?? `${url}${entry.path}`
  const base = issuer.endsWith('/') ? issuer : `${issuer}/`
  const realm = createRealmState(entry.name, url, {
    issuer,
    jwksUri: `${base}${entry.jwksPath}`,
    tokenEndpoint: `${base}${entry.tokenPath}`,
  })
  paths.set(`${served}.well-known/openid-configuration`, { realm, endpoint: 'discovery' })
  paths.set(`${served}${entry.jwksPath}`, { realm, endpoint: 'certs' })
  paths.set(`${served}${entry.tokenPath}`, { realm, endpoint: 'token' })
  return realm
}

function withoutUndefined(entries: Record<string, unknown>): Record<string, unknown> {
  for (const [name, value] of Object.entries(entries)) {
    if (value === undefined) delete entries[name]
  }
  return entries
}

/**
 * Starts a development OpenID provider on a free 127.0.0.1 port, shaped like Keycloak: per realm
 * a JWKS at `/realms/{realm}/protocol/openid-connect/certs`, a discovery document at
 * `/realms/{realm}/.well-known/openid-configuration` and a `client_credentials` token endpoint.
 * Keys are generated at start (in parallel; about 0.1 s per RSA key). Close it when done.
 *
 * @throws TypeError when an option is invalid.
 *
 * @example
 * ```ts
 * import { createRemoteJWKSet, jwtVerify } from 'jose'
 * import { createTestIssuer } from 'tollgate/testing'
 *
 * const issuer = await createTestIssuer({ algorithms: ['ES256'], audience: 'orders' })
 * const token = await issuer.mint({ scope: 'orders:read' })
 * const { payload } = await jwtVerify(token, createRemoteJWKSet(new URL(issuer.jwksUri())), {
 *   issuer: issuer.issuer(),
 *   audience: 'orders',
 * })
 * await issuer.rotate() // new key published next to the old one, and minted with from now on
 * issuer.setFault({ kind: 'status', status: 503 }) // the certs endpoint fails
 * await issuer.close()
 * ```
 */
export async function createTestIssuer(options?: TestIssuerOptions): Promise<TestIssuer> {
  const {
    realms: realmNames,
    algorithms,
    audience,
    clients,
    issuers: pathIssuers,
    port,
  } = normalizeTestIssuerOptions(options)
  const defaultAlg = algorithms[0] as TestAlgorithm
  const keysById = new Map<string, { readonly key: TestKey; readonly realm: RealmState }>()
  const realms = new Map<string, RealmState>()
  const paths = new Map<string, PathRoute>()

  const realmOf = (name: string | undefined): RealmState => {
    const realm = realms.get(name ?? (realmNames[0] as string))
    if (!realm) throw new Error(`test issuer: unknown realm "${name}"`)
    return realm
  }
  const keyOf = (kid: string) => {
    const entry = keysById.get(kid)
    if (!entry) throw new Error(`test issuer: unknown kid "${kid}"`)
    return entry
  }
  const currentKey = (realm: RealmState, alg: TestAlgorithm): TestKey => {
    const key = realm.current.get(alg)
    if (!key) {
      throw new Error(
        `test issuer: realm "${realm.name}" has no ${alg} key; list it in "algorithms" or rotate()`,
      )
    }
    return key
  }
  const register = (realm: RealmState, key: TestKey): void => {
    keysById.set(key.kid, { key, realm })
    addKey(realm, key)
  }

  const mint: TestIssuer['mint'] = async (claims = {}, mintOptions = {}) => {
    checkMintArguments(claims, mintOptions)
    const realm = realmOf(mintOptions.realm)
    const key =
      mintOptions.kid === undefined
        ? currentKey(realm, mintOptions.alg ?? defaultAlg)
        : keyOf(mintOptions.kid).key
    const now = Math.floor(Date.now() / 1000)
    const payload = withoutUndefined({
      iss: realm.issuer,
      aud: audience,
      sub: 'user-1',
      azp: 'test-client',
      typ: 'Bearer',
      scope: 'openid profile email',
      iat: now,
      exp: now + (mintOptions.expiresInSeconds ?? ACCESS_TOKEN_SECONDS),
      jti: randomUUID(),
      cnf: confirmationOf(mintOptions),
      ...claims,
    })
    const header = withoutUndefined({
      alg: mintOptions.alg ?? key.alg,
      typ: 'JWT',
      kid: key.kid,
      ...mintOptions.header,
    })
    return signCompactJWS(key, header, payload)
  }

  const mintLogoutToken: TestIssuer['mintLogoutToken'] = (claims = {}, mintOptions = {}) =>
    mint(
      {
        azp: undefined,
        scope: undefined,
        typ: 'Logout',
        events: { [LOGOUT_EVENT]: {} },
        ...claims,
      },
      {
        ...mintOptions,
        expiresInSeconds: mintOptions.expiresInSeconds ?? LOGOUT_TOKEN_SECONDS,
        header: { typ: 'logout+jwt', ...mintOptions.header },
      },
    )

  const server = await listenOnLoopback(
    createRequestHandler({
      realms,
      paths,
      token: (req, realm) =>
        handleTokenRequest(req, clients, (claims) => mint(claims, { realm: realm.name })),
      statusList: (realm, name) =>
        statusListReply(realm.statusLists.get(name) as StatusListState, (header, payload) => {
          const key = currentKey(realm, defaultAlg)
          return signCompactJWS(key, { alg: key.alg, kid: key.kid, ...header }, payload)
        }),
    }),
    port,
  )
  try {
    const names = [...realmNames, ...pathIssuers.map((entry) => entry.name)]
    const generated = await Promise.all(
      names.map(() => Promise.all(algorithms.map(generateTestKey))),
    )
    names.forEach((name, index) => {
      const atPath = pathIssuers[index - realmNames.length]
      const realm = atPath
        ? servePathIssuer(atPath, server.url, paths)
        : createRealmState(name, server.url)
      realms.set(name, realm)
      for (const key of generated[index] ?? []) register(realm, key)
    })
  } catch (error) {
    await server.close()
    throw error
  }

  const issuer = (realm = realmNames[0] as string) =>
    realms.get(realm)?.issuer ?? `${server.url}/realms/${realm}`

  return Object.freeze({
    url: server.url,
    realms: realmNames,
    issuer,
    jwksUri: (realm?: string) => realms.get(realm ?? '')?.jwksUri ?? jwksUriOf(issuer(realm)),
    mint,
    mintLogoutToken,
    statusList(name = 'default', listOptions = {}) {
      const realm = realmOf(listOptions.realm)
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) {
        throw new TypeError('statusList(): "name" must be 1 to 64 letters, digits, "-" or "_"')
      }
      let list = realm.statusLists.get(name)
      if (list === undefined) {
        list = new StatusListState(`${realm.issuer}/statuslists/${name}`, listOptions)
        realm.statusLists.set(name, list)
      }
      return list
    },
    async sign(header, payload, signOptions = {}) {
      const realm = realmOf(signOptions.realm)
      const key =
        signOptions.kid !== undefined
          ? keyOf(signOptions.kid).key
          : ((isTestAlgorithm(header['alg']) ? realm.current.get(header['alg']) : undefined) ??
            currentKey(realm, defaultAlg))
      return signCompactJWS(key, header, payload)
    },
    async rotate(rotateOptions = {}) {
      const realm = realmOf(rotateOptions.realm)
      const alg = rotateOptions.alg ?? defaultAlg
      if (!isTestAlgorithm(alg)) throw new TypeError(`rotate(): unknown algorithm "${alg}"`)
      const previous = realm.current.get(alg)
      const key = await generateTestKey(alg)
      register(realm, key)
      if (rotateOptions.keepPrevious === false && previous) realm.published.delete(previous.kid)
      return key.kid
    },
    unpublish(kid) {
      const { realm } = keyOf(kid)
      realm.published.delete(kid)
    },
    jwks: (realm) => jwksDocument(realmOf(realm)),
    overrideJwks(body, overrideOptions = {}) {
      const realm = realmOf(overrideOptions.realm)
      if (body === undefined) {
        realm.certsOverride = undefined
        return
      }
      const { status = 200, contentType = 'application/json' } = overrideOptions
      if (!isFinalStatus(status)) throw new TypeError('overrideJwks(): "status" must be 200-599')
      validateHeaderValue('content-type', contentType)
      const text = typeof body === 'string' ? body : JSON.stringify(body)
      if (text === undefined) throw new TypeError('overrideJwks(): "body" is not JSON-serializable')
      realm.certsOverride = {
        status,
        headers: { 'content-type': contentType, 'cache-control': 'no-cache' },
        body: text,
      }
    },
    privateKey(kid) {
      const { key } = keyOf(kid)
      return { key: key.privateKey, jwk: { ...key.privateJwk }, alg: key.alg }
    },
    setFault(fault, faultOptions = {}) {
      const realm = realmOf(faultOptions.realm)
      if (fault !== undefined) checkFault(fault)
      const { endpoint } = faultOptions
      if (endpoint === 'certs' || endpoint === 'discovery') {
        realm.faults[endpoint] = fault
      } else if (endpoint === undefined) {
        realm.faults.certs = fault
        realm.faults.discovery = fault?.kind === 'empty-keys' ? undefined : fault
      } else {
        throw new TypeError('setFault(): "endpoint" must be "certs" or "discovery"')
      }
    },
    fetchCount: (realm) => realmOf(realm).certsCount,
    discoveryCount: (realm) => realmOf(realm).discoveryCount,
    resetCounts() {
      for (const realm of realms.values()) {
        realm.certsCount = 0
        realm.discoveryCount = 0
      }
    },
    stop: () => server.stop(),
    start: () => server.start(),
    close: () => server.close(),
  } satisfies TestIssuer)
}
