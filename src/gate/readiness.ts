/**
 * A gate's readiness: `gate.ready()` (keys warmed, revocation list held) and `gate.refresh()`
 * (keys fetched now), both reported as a {@link ReadyReport}.
 *
 * @module
 */
import type { IntrospectionStatus } from '../introspection/introspector.js'
import type { Revocation } from '../revocation/revocation.js'
import type { IssuerKeys, IssuerKeysStatus } from '../token/jwks.js'

/**
 * What `gate.ready()` and `gate.refresh()` report: `ready` when every issuer has usable keys and,
 * with `revocation` on, `gate.ready()` found the revocation list held.
 */
export interface ReadyReport {
  readonly ready: boolean
  readonly issuers: readonly IssuerKeysStatus[]
  /**
   * With `revocation` on, from `gate.ready()`: `'held'` once this instance holds the revocation
   * list (first Redis synchronization, `load` done), `'not_held'` if it still did not after
   * waiting up to `revocation.storeTimeoutMs`.
   */
  readonly revocation?: 'held' | 'not_held'
  /**
   * From `gate.ready()`, for issuers whose tokens are introspected: each one's endpoint (given or
   * discovered) and whether it answered (`ready` needs every one `ready`).
   */
  readonly introspection?: readonly IntrospectionStatus[]
}

/** A gate's `ready()` and `refresh()` (see {@link Gate}). */
export interface Readiness {
  ready(): Promise<ReadyReport>
  refresh(issuer?: string): Promise<ReadyReport>
}

/** Builds a gate's readiness over its issuers' key sets and its revocation step (when on). */
export function createReadiness(
  issuers: ReadonlyMap<string, { readonly keys: IssuerKeys }>,
  revoked: Revocation | undefined,
  introspection?: () => Promise<readonly IntrospectionStatus[]>,
): Readiness {
  const allKeys = [...issuers.values()].map((entry) => entry.keys)

  /**
   * Warms (`ready()`: only what is not fresh) or refreshes each key set once, however many of
   * the selected issuers share it, then reports every issuer.
   */
  async function report(selected: readonly IssuerKeys[], now: boolean): Promise<ReadyReport> {
    const settling = new Map<IssuerKeys['keySet'], Promise<unknown>>()
    for (const keys of selected) {
      if (!settling.has(keys.keySet)) {
        settling.set(keys.keySet, now ? keys.refreshNow() : keys.warm())
      }
    }
    await Promise.all(settling.values())
    const statuses = selected.map((keys) => keys.status())
    return {
      ready: statuses.every((status) => status.state !== 'unavailable'),
      issuers: statuses,
    }
  }

  async function ready(): Promise<ReadyReport> {
    const [keys, , endpoints] = await Promise.all([
      report(allKeys, false),
      revoked?.whenHeld(),
      introspection?.(),
    ])
    const introspected =
      endpoints === undefined
        ? undefined
        : { introspection: endpoints, ready: endpoints.every((e) => e.state === 'ready') }
    if (revoked === undefined && introspected === undefined) return keys
    const held = revoked === undefined || revoked.held
    return {
      ready: keys.ready && held && (introspected?.ready ?? true),
      issuers: keys.issuers,
      ...(revoked === undefined ? {} : { revocation: held ? 'held' : 'not_held' }),
      ...(introspected === undefined ? {} : { introspection: introspected.introspection }),
    }
  }

  function refresh(issuer?: string): Promise<ReadyReport> {
    if (issuer === undefined) return report(allKeys, true)
    const entry = typeof issuer === 'string' ? issuers.get(issuer) : undefined
    if (entry === undefined) {
      throw new TypeError(
        'gate.refresh(issuer): "issuer" must be one of the configured issuers (the exact iss)',
      )
    }
    return report([entry.keys], true)
  }

  return { ready, refresh }
}
