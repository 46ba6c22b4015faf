import type { SharedStore } from 'tollgate'

/** Hosts where plain http never leaves the machine. */
const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost'])

/**
 * A SharedStore over HTTP: one POST per operation to the counter service at `url`, with the
 * service's secret. The secret travels with every call and the answers decide admissions, so
 * `url` must be https (plain http only on loopback). Each call gives up after `timeoutMs`:
 * tollgate stops waiting at its `storeTimeoutMs` but cannot cancel a call, and without this a
 * hung service would hold one connection open per request. A refusal or an answer outside the
 * contract is an error, which tollgate treats as a store failure.
 */
export function httpSharedStore(url: string, secret: string, timeoutMs = 1000): SharedStore {
  const { protocol, hostname } = new URL(url)
  if (protocol !== 'https:' && !(protocol === 'http:' && LOOPBACK.has(hostname))) {
    throw new TypeError(`httpSharedStore: ${url} must be https (http only on loopback)`)
  }
  async function call(operation: string, body: object): Promise<Record<string, unknown>> {
    const response = await fetch(`${url}/${operation}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    })
    if (!response.ok) throw new Error(`counter service answered ${response.status}`)
    return ((await response.json()) ?? {}) as Record<string, unknown>
  }
  return {
    async increment(key, amount, ttlMs) {
      const { count, msBeforeReset } = await call('increment', { key, amount, ttlMs })
      if (
        typeof count !== 'number' ||
        !Number.isSafeInteger(count) ||
        count < amount ||
        typeof msBeforeReset !== 'number' ||
        !(msBeforeReset >= 0)
      ) {
        throw new Error('counter service answered a malformed count')
      }
      // A counter expires at most ttlMs after it opened: a longer wait would block the tenant
      // past its window.
      return { count, msBeforeReset: Math.min(msBeforeReset, ttlMs) }
    },
    async claimOnce(key, ttlMs) {
      const { claimed } = await call('claim-once', { key, ttlMs })
      if (typeof claimed !== 'boolean')
        throw new Error('counter service answered a malformed claim')
      return claimed
    },
  }
}
