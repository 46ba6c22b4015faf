/**
 * DPoP client keys for tests (RFC 9449): a key pair whose thumbprint binds tokens
 * (`issuer.mint(claims, { dpop: key })`) and that signs proofs for requests, well-formed by
 * default and as hostile as a test needs through `header` and `claims` overrides.
 *
 * @module
 */
import { createHash, randomUUID } from 'node:crypto'

import { generateTestKey, signCompactJWS, type TestAlgorithm, type TestKey } from './keys.js'

/** What a proof is for, and anything a test wants to change in it. */
export interface DpopProofOptions {
  /** `htm`: the request's method. */
  readonly method: string
  /** `htu`: the request's URL as the client sees it (query and fragment are left out). */
  readonly url: string
  /** The access token the proof goes with: sets `ath` (RFC 9449 §4.2). */
  readonly accessToken?: string | undefined
  /** `nonce`, when the resource server asked for one (`DPoP-Nonce`). */
  readonly nonce?: string | undefined
  /** `iat`, in seconds. Default: now (`Date.now()`, so fake timers move it). */
  readonly iat?: number | undefined
  /** `jti`. Default: a random UUID. */
  readonly jti?: string | undefined
  /** Header members merged over `{ typ: 'dpop+jwt', alg, jwk }`; `undefined` removes one. */
  readonly header?: Readonly<Record<string, unknown>> | undefined
  /** Claims merged over the defaults; `undefined` removes one. */
  readonly claims?: Readonly<Record<string, unknown>> | undefined
}

/** A DPoP client key; see {@link createDpopKey}. */
export interface TestDpopKey {
  readonly alg: TestAlgorithm
  /** The RFC 7638 SHA-256 thumbprint of the public key, as in a bound token's `cnf.jkt`. */
  readonly jkt: string
  /** The public JWK a proof carries: the required members only. */
  readonly publicJwk: Readonly<Record<string, string>>
  /** The private JWK, for tests of a proof that leaks it. */
  readonly privateJwk: Readonly<Record<string, unknown>>
  /** Signs a proof for one request. */
  proof(options: DpopProofOptions): Promise<string>
  /** `Authorization: DPoP <token>` and a fresh `DPoP` proof for one request. */
  headers(
    accessToken: string,
    request: {
      readonly method: string
      readonly url: string
      readonly nonce?: string | undefined
    },
  ): Promise<{ Authorization: string; DPoP: string }>
  /** Signs exactly `header` and `payload` with this key, adding nothing. */
  sign(
    header: Readonly<Record<string, unknown>>,
    payload: Readonly<Record<string, unknown>> | string,
  ): Promise<string>
}

const THUMBPRINT_MEMBERS: Readonly<Record<string, readonly string[]>> = {
  EC: ['crv', 'kty', 'x', 'y'],
  OKP: ['crv', 'kty', 'x'],
  RSA: ['e', 'kty', 'n'],
}

function withoutUndefined(entries: Record<string, unknown>): Record<string, unknown> {
  for (const [name, value] of Object.entries(entries)) {
    if (value === undefined) delete entries[name]
  }
  return entries
}

function withoutQuery(url: string): string {
  const end = url.search(/[?#]/)
  return end === -1 ? url : url.slice(0, end)
}

/**
 * Generates a DPoP key pair (default ES256, the algorithm most clients use).
 *
 * @example
 * ```ts
 * const key = await createDpopKey()
 * const token = await issuer.mint({ scope: 'orders:read' }, { dpop: key })
 * await request(app)
 *   .get('/orders')
 *   .set(await key.headers(token, { method: 'GET', url: 'https://api.example.com/orders' }))
 *   .expect(200)
 * ```
 */
export async function createDpopKey(alg: TestAlgorithm = 'ES256'): Promise<TestDpopKey> {
  const key: TestKey = await generateTestKey(alg)
  const publicJwk: Record<string, string> = {}
  for (const member of THUMBPRINT_MEMBERS[key.privateJwk.kty as string] ?? []) {
    publicJwk[member] = key.privateJwk[member] as string
  }
  // generateTestKey names keys by their RFC 7638 thumbprint (jose's calculateJwkThumbprint).
  const jkt = key.kid

  async function proof(options: DpopProofOptions): Promise<string> {
    const header = withoutUndefined({
      typ: 'dpop+jwt',
      alg,
      jwk: publicJwk,
      ...options.header,
    })
    const payload = withoutUndefined({
      jti: options.jti ?? randomUUID(),
      htm: options.method,
      htu: withoutQuery(options.url),
      iat: options.iat ?? Math.floor(Date.now() / 1000),
      ath:
        options.accessToken === undefined
          ? undefined
          : createHash('sha256').update(options.accessToken, 'ascii').digest('base64url'),
      nonce: options.nonce,
      ...options.claims,
    })
    return signCompactJWS(key, header, payload)
  }

  return Object.freeze({
    alg,
    jkt,
    publicJwk: Object.freeze(publicJwk),
    privateJwk: key.privateJwk,
    proof,
    async headers(accessToken, request) {
      return {
        Authorization: `DPoP ${accessToken}`,
        DPoP: await proof({ ...request, accessToken }),
      }
    },
    sign: (header, payload) => signCompactJWS(key, header, payload),
  } satisfies TestDpopKey)
}
