/**
 * In-memory storage for the development provider, through oidc-provider's documented `adapter`
 * interface. Its own (rather than oidc-provider's quick-start adapter) so that it outlives a key
 * rotation, which builds a new provider over the same sessions, grants and refresh tokens, and so
 * that oidc-provider does not warn about a quick-start adapter the development provider chose.
 *
 * @module
 */
import type { ProviderAdapter } from './oidc-provider-api.js'

interface Entry {
  readonly payload: Record<string, unknown>
  readonly expiresAt: number
}

/** The store of one development provider; `adapter` is what oidc-provider's `adapter` option takes. */
export function createDevStore(now: () => number = Date.now) {
  const entries = new Map<string, Entry>()
  // grantId → keys of the tokens and codes issued under it, for revokeByGrantId (reuse detection).
  const byGrant = new Map<string, Set<string>>()
  const byUid = new Map<string, string>()
  const byUserCode = new Map<string, string>()

  const read = (key: string): Record<string, unknown> | undefined => {
    const entry = entries.get(key)
    if (entry === undefined) return undefined
    if (entry.expiresAt <= now()) {
      entries.delete(key)
      return undefined
    }
    return entry.payload
  }

  function adapter(model: string): ProviderAdapter {
    const keyOf = (id: string) => `${model}:${id}`
    return {
      async upsert(id, payload, expiresIn) {
        const key = keyOf(id)
        const expiresAt =
          expiresIn === undefined ? Number.POSITIVE_INFINITY : now() + expiresIn * 1000
        entries.set(key, { payload: { ...payload }, expiresAt })
        const grantId = payload['grantId']
        if (typeof grantId === 'string') {
          const keys = byGrant.get(grantId) ?? new Set()
          keys.add(key)
          byGrant.set(grantId, keys)
        }
        if (typeof payload['uid'] === 'string') byUid.set(payload['uid'], key)
        if (typeof payload['userCode'] === 'string') byUserCode.set(payload['userCode'], key)
      },
      async find(id) {
        return read(keyOf(id))
      },
      async findByUid(uid) {
        const key = byUid.get(uid)
        return key === undefined ? undefined : read(key)
      },
      async findByUserCode(userCode) {
        const key = byUserCode.get(userCode)
        return key === undefined ? undefined : read(key)
      },
      async consume(id) {
        const entry = entries.get(keyOf(id))
        if (entry !== undefined) entry.payload['consumed'] = Math.floor(now() / 1000)
      },
      async destroy(id) {
        entries.delete(keyOf(id))
      },
      async revokeByGrantId(grantId) {
        for (const key of byGrant.get(grantId) ?? []) entries.delete(key)
        byGrant.delete(grantId)
      },
    }
  }

  return { adapter }
}
