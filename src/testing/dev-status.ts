/**
 * The development provider as a Token Status List issuer (draft-ietf-oauth-status-list): every
 * access token it signs names a fresh index of one list (`status.status_list { idx, uri }`), the
 * list is served at `{issuer}/statuslists/access-tokens` signed with the provider's current key,
 * and `revokeToken()` sets a token's status to INVALID.
 *
 * @module
 */
import { compactVerify, createLocalJWKSet } from 'jose'

import { STATUS_INVALID } from '../status/bits.js'
import type { Reply } from './http.js'
import { signCompactJWS, type TestKey } from './keys.js'
import { StatusListState, statusListReply } from './status-lists.js'

/** The one list's name, under `{issuer}/statuslists/`. */
export const DEV_STATUS_LIST = 'access-tokens'
/** Indexes of the list: the first this many access tokens get one (1 bit each: 128 KB). */
const SIZE = 1_048_576
/** The list's `ttl`: a gate may keep it this long (its own `maxCacheSeconds` may say less). */
const TTL_SECONDS = 60

/** The provider's list: hands out indexes, serves the list, revokes tokens. */
export interface DevStatusList {
  readonly uri: string
  /** The `status` claim of the next access token (a fresh index). */
  claim(): { readonly status: { readonly status_list: { idx: number; uri: string } } }
  /** The signed Status List Token, as fetched now. */
  reply(key: TestKey): Promise<Reply>
  /** Sets `accessToken`'s index to INVALID; `keys` verify that the provider signed it. */
  revoke(accessToken: string, keys: readonly TestKey[]): Promise<void>
}

export function createDevStatusList(issuer: string): DevStatusList {
  const uri = `${issuer}/statuslists/${DEV_STATUS_LIST}`
  const list = new StatusListState(uri, { bits: 1, size: SIZE, ttlSeconds: TTL_SECONDS })
  let next = 0
  return {
    uri,
    claim() {
      if (next >= SIZE) {
        throw new Error(`the development provider's status list is full (${SIZE} access tokens)`)
      }
      const idx = next
      next += 1
      return { status: { status_list: { idx, uri } } }
    },
    reply: (key) =>
      statusListReply(list, (header, payload) =>
        signCompactJWS(key, { ...header, alg: key.alg, kid: key.kid }, payload),
      ),
    async revoke(accessToken, keys) {
      const jwks = createLocalJWKSet({ keys: keys.map((key) => ({ ...key.publicJwk })) })
      let claims: Record<string, unknown>
      try {
        // Signature only: an expired token may be revoked too (its bit stays set).
        const { payload } = await compactVerify(accessToken, jwks)
        claims = JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>
      } catch {
        throw new TypeError('revokeToken(): not an access token signed by this provider')
      }
      const reference = (claims['status'] as { status_list?: { idx?: unknown; uri?: unknown } })
        ?.status_list
      if (
        claims['iss'] !== issuer ||
        reference?.uri !== uri ||
        typeof reference.idx !== 'number' ||
        !Number.isInteger(reference.idx) ||
        reference.idx < 0 ||
        reference.idx >= next
      ) {
        throw new TypeError(
          "revokeToken(): the token names no index of this provider's status list (was the provider started with statusList: true?)",
        )
      }
      list.set(reference.idx, STATUS_INVALID)
    },
  }
}
