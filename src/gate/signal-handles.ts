/**
 * What a Shared Signals receiver built over a gate reaches that the application does not: the
 * gate's revocations reported as the signal's (`source: 'shared_signals'`, with the SET), a
 * subject's cached verdicts dropped on every instance (a claims change), and the stream's state
 * in `gate.ready()`. The receiver is built after the gate, from it (`createSignalReceiver({ gate
 * })`): `createGate()` registers these handles under the gate it returns, and the receiver finds
 * them with {@link signalHandlesOf}. Not exported by the package.
 *
 * @module
 */
import type { RevocationSignal } from '../events.js'
import type { IntrospectionStep } from '../introspection/verifier.js'
import type {
  Revocation,
  RevocationReceipt,
  RevocationTarget,
  RevokeOptions,
  VerdictSubject,
} from '../revocation/revocation.js'
import type { Verdict, VerdictCaches } from '../token/verify.js'
import type { StreamReporter } from './readiness.js'

export type { VerdictSubject } from '../revocation/revocation.js'

/** The gate's side of a Shared Signals receiver. */
export interface SignalHandles {
  /** `gate.revoke()`, reported with `source: 'shared_signals'` and the SET applied. */
  revoke(target: RevokeOptions, signal: RevocationSignal): Promise<RevocationReceipt>
  /** `gate.unrevoke()`, reported likewise. */
  unrevoke(target: RevocationTarget, signal: RevocationSignal): Promise<RevocationReceipt>
  /**
   * Drops the cached verdicts (verified tokens, introspection answers) of the tokens naming
   * `subject`, here at once and, with the Redis revocation store, on every instance sharing it:
   * the next request with one of them is verified, or introspected, afresh. `'queued'`: Redis
   * did not take the message (this instance dropped its own; the others did not hear of it).
   *
   * @throws TypeError (as a rejection) when `subject.issuer` is not a configured issuer.
   */
  forget(subject: VerdictSubject): Promise<RevocationReceipt>
  /** Adds a stream to `gate.ready()`; returns the function that takes it out. */
  attachStream(reporter: StreamReporter): () => void
}

/** What the handles are built from: the gate's steps, its drops, its readiness. */
export interface SignalHandlesContext {
  /** The revocation step (`undefined` without the `revocation` option). */
  readonly revoked: Revocation | undefined
  /** `gate.revoke()` and `gate.unrevoke()` (which reject without the `revocation` option). */
  readonly handles: {
    revoke(target: RevokeOptions): Promise<RevocationReceipt>
    unrevoke(target: RevocationTarget): Promise<RevocationReceipt>
  }
  readonly drops: VerdictDrops
  /** The configured issuers (exact `iss`): a drop naming another is refused, as a revocation is. */
  readonly issuers: ReadonlyMap<string, unknown>
  readonly attachStream: (reporter: StreamReporter) => () => void
}

/**
 * Subjects other instances asked to drop, held until the next turn of the event loop and dropped
 * in one walk of the caches; past this many at once, every verdict is dropped instead (cheaper
 * than matching, and it costs each token one verification).
 */
const MAX_PENDING_DROPS = 1000

/** Whether a verdict is of one of `subjects`: its issuer (or any), and its `sub` or `sid`. */
function matcherOf(subjects: readonly VerdictSubject[]): (verdict: Verdict) => boolean {
  const named = new Set<string>()
  for (const { issuer, kind, value } of subjects) named.add(`${issuer ?? ''}\0${kind}\0${value}`)
  return ({ admission }) => {
    const { issuer, subject } = admission
    const sid = admission.claims.sid
    if (subject !== undefined) {
      if (named.has(`${issuer}\0sub\0${subject}`) || named.has(`\0sub\0${subject}`)) return true
    }
    if (typeof sid === 'string') {
      if (named.has(`${issuer}\0sid\0${sid}`) || named.has(`\0sid\0${sid}`)) return true
    }
    return false
  }
}

/**
 * The drops of a gate's cached verdicts (its verified-token cache and its introspection caches):
 * this instance's at once, its peers' (through the revocation store's channel) gathered and made
 * in one walk per turn of the event loop, so that a burst of messages costs one walk, not one each.
 */
export class VerdictDrops {
  private pending: VerdictSubject[] = []
  private everything = false
  private scheduled = false
  private readonly caches: VerdictCaches | undefined
  private readonly introspection: IntrospectionStep | undefined

  constructor(caches: VerdictCaches | undefined, introspection: IntrospectionStep | undefined) {
    this.caches = caches
    this.introspection = introspection
  }

  /** Drops now (a signal this instance applies: done before the SET is acknowledged). */
  now(subject: VerdictSubject): void {
    this.walk(matcherOf([subject]))
  }

  /** Drops on the next turn, with every other drop a peer asked for meanwhile. */
  later = (subject: VerdictSubject): void => {
    if (this.pending.length >= MAX_PENDING_DROPS) this.everything = true
    else this.pending.push(subject)
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(() => {
      const subjects = this.pending
      const everything = this.everything
      this.pending = []
      this.everything = false
      this.scheduled = false
      this.walk(everything ? () => true : matcherOf(subjects))
    })
  }

  private walk(matches: (verdict: Verdict) => boolean): void {
    this.caches?.verdicts.drop(matches)
    this.introspection?.forgetWhere(matches)
  }
}

/** Builds a gate's signal handles. */
export function createSignalHandles(context: SignalHandlesContext): SignalHandles {
  const { revoked, drops } = context
  return {
    revoke: (target, signal) =>
      revoked === undefined
        ? context.handles.revoke(target)
        : // Async so that an invalid target is a rejection, as with `gate.revoke()`.
          (async () => revoked.revoke(target, 'shared_signals', signal))(),
    unrevoke: (target, signal) =>
      revoked === undefined
        ? context.handles.unrevoke(target)
        : (async () => revoked.unrevoke(target, 'shared_signals', signal))(),
    async forget(subject) {
      if (subject.issuer !== undefined && !context.issuers.has(subject.issuer)) {
        throw new TypeError('forget(subject): "issuer" must be one of the configured issuers')
      }
      drops.now(subject)
      const published = (await revoked?.publishDrop(subject)) ?? 'memory'
      return { stored: published === 'failed' ? 'queued' : published }
    },
    attachStream: context.attachStream,
  }
}

const registry = new WeakMap<object, SignalHandles>()

/** Registers a gate's handles (called by `createGate()`). */
export function registerSignalHandles(gate: object, handles: SignalHandles): void {
  registry.set(gate, handles)
}

/** The handles of a gate made by `createGate()`, else `undefined`. */
export function signalHandlesOf(gate: object): SignalHandles | undefined {
  return registry.get(gate)
}
