/**
 * The slots of one token source, by request parameters (issuer, token endpoint, client, grant,
 * scope, resource, audience): at most 1000, the oldest idle one making room; the slot of the
 * source's default parameters is never dropped.
 *
 * @module
 */
import type { GrantType } from './events.js'
import {
  type NormalizedParameters,
  normalizeParameters,
  type TokenParameters,
} from './parameters.js'
import type { SharedCache } from './shared-cache.js'
import type { Slot } from './slot.js'

const MAX_SLOTS = 1000

/** Who asks for the tokens of a source: the same for all its slots. */
export interface SlotIdentity {
  readonly issuer: string
  readonly tokenEndpoint: string | undefined
  readonly clientId: string
  readonly grant: GrantType
}

export class SlotTable {
  private readonly slots = new Map<string, Slot>()
  private readonly identity: SlotIdentity
  private readonly shared: SharedCache | undefined
  private readonly defaults: NormalizedParameters
  /** The slot of the source's own `scope`, `resource` and `audience`. */
  readonly defaultSlot: Slot

  constructor(
    identity: SlotIdentity,
    defaults: NormalizedParameters,
    shared: SharedCache | undefined,
  ) {
    this.identity = identity
    this.defaults = defaults
    this.shared = shared
    this.defaultSlot = this.slotOf(defaults)
  }

  /**
   * The slot of `parameters` (the default slot when omitted).
   *
   * @throws TypeError when `parameters` are invalid.
   */
  of(parameters: TokenParameters | undefined): Slot {
    if (parameters === undefined) return this.defaultSlot
    return this.slotOf(normalizeParameters(parameters, this.defaults))
  }

  /** Drops the token every slot holds. */
  forgetTokens(): void {
    for (const slot of this.slots.values()) slot.current = undefined
  }

  private keyOf(parameters: NormalizedParameters): string {
    const { issuer, tokenEndpoint, clientId, grant } = this.identity
    return JSON.stringify([
      issuer,
      tokenEndpoint ?? '',
      clientId,
      grant,
      parameters.scope ?? '',
      parameters.resource,
      parameters.audience ?? '',
    ])
  }

  private slotOf(parameters: NormalizedParameters): Slot {
    const key = this.keyOf(parameters)
    let slot = this.slots.get(key)
    if (slot !== undefined) return slot
    if (this.slots.size >= MAX_SLOTS) {
      for (const [oldKey, old] of this.slots) {
        if (old.pending === undefined && old !== this.defaultSlot) {
          this.slots.delete(oldKey)
          break
        }
      }
    }
    const { issuer, clientId, grant } = this.identity
    slot = {
      key,
      parameters,
      facts: {
        issuer,
        clientId,
        grant,
        scope: parameters.scope,
        resource: parameters.resource,
        audience: parameters.audience,
      },
      sharedKey: this.shared?.keyOf(key),
      current: undefined,
      pending: undefined,
      failures: 0,
      retryAt: 0,
      lastError: undefined,
      lastDroppedAt: Number.NEGATIVE_INFINITY,
      refusedRaw: undefined,
      awaited: false,
      sleeping: undefined,
    }
    this.slots.set(key, slot)
    return slot
  }
}
