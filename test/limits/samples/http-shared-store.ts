import type { SharedStore } from 'tollgate'

/**
 * A SharedStore over HTTP: one POST per operation to the counter service at `url`, with the
 * service's secret. tollgate bounds each call with the option's `storeTimeoutMs` and checks what
 * it resolves to, so this client only carries the call and turns a refusal into an error.
 */
export function httpSharedStore(url: string, secret: string): SharedStore {
  async function call<T>(operation: 'increment' | 'claim-once', body: object): Promise<T> {
    const response = await fetch(`${url}/${operation}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    if (!response.ok) throw new Error(`counter service answered ${response.status}`)
    return (await response.json()) as T
  }
  return {
    increment: (key, amount, ttlMs) =>
      call<{ count: number; msBeforeReset: number }>('increment', { key, amount, ttlMs }),
    claimOnce: async (key, ttlMs) =>
      (await call<{ claimed: boolean }>('claim-once', { key, ttlMs })).claimed,
  }
}
