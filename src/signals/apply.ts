/**
 * What a verified SET does to the gate, through its fleet revocation (`gate.revoke()`,
 * `gate.unrevoke()`): every instance sharing the revocation store refuses what it names.
 *
 * - `session-revoked`: the named session (`sid`); without one, the subject's tokens issued up to
 *   the event (`iat` ≤ event time).
 * - `credential-change`, RISC `credential-compromise`, `account-disabled`, `account-purged`,
 *   `sessions-revoked`: the subject's tokens issued up to the event.
 * - `account-enabled`: lifts what `account-disabled` set, and only that. The revocation store
 *   keeps one not-before per user; it does not say who set it. So the receiver records, per
 *   user, the not-before its `account-disabled` set and the highest one its other signals set:
 *   on `account-enabled` (later than the disable) it removes the user's entry and puts back the
 *   other signals' not-before, if any. A `gate.revoke({ sub })` or back-channel logout by `sub`
 *   made by something other than this receiver while the account was disabled is lifted with
 *   it: the store cannot tell it apart (see docs/signals.md).
 * - `token-claims-change`, `assurance-level-change`: nothing is revoked; the cached verdicts of
 *   the tokens the subject names are dropped, on every instance sharing the revocation store, so
 *   that the next request is judged afresh: an introspected token is asked about again (the
 *   provider answers with the claims as they are now); a JWT is verified again, from the claims
 *   it carries (changed claims reach the API with the user's next token).
 *
 * Revocations are reported with `source: 'shared_signals'` and the SET (`signal`).
 *
 * @module
 */
import type { RevocationSignal } from '../events.js'
import type { Gate } from '../gate/gate.js'
import type { SignalHandles } from '../gate/signal-handles.js'
import type { RevocationReceipt } from '../revocation/revocation.js'
import type { SignalChange } from './events.js'
import { type SignalStore, storeKey } from './store.js'
import type { SubjectTarget } from './subject.js'
import type { SignalAction } from './vocabulary.js'

/** A change the store could not take (Redis down: `queued`): the SET must not be acknowledged. */
export class NotApplied extends Error {
  constructor() {
    super('revocation queued, not stored')
    this.name = 'NotApplied'
  }
}

/** What applying needs. */
export interface ApplyContext {
  readonly gate: Gate
  /** The gate's side of the receiver; `undefined` for a gate-like object `createGate()` did not make. */
  readonly handles: SignalHandles | undefined
  /** The SET applied, for the revocation events. */
  readonly signal: RevocationSignal
  readonly store: SignalStore
  readonly clockToleranceSeconds: number
  readonly recordTtlMs: number
  readonly nowMs: number
}

interface Record_ {
  /** The not-before the last `account-disabled` set, when it still holds. */
  disabled?: number
  /** The highest not-before this receiver's other signals set for the user. */
  other?: number
}

function stored(receipt: RevocationReceipt): void {
  // `queued`: this instance enforces it and Redis gets it later (a drop: this instance dropped its
  // verdicts, the others did not hear of it); other instances do not yet, so the transmitter must
  // send it again (nothing acknowledged that the fleet does not enforce).
  if (receipt.stored === 'queued') throw new NotApplied()
}

/**
 * The not-before that refuses tokens issued up to the event: whole seconds after it, never
 * later than now plus the tolerance (a transmitter's clock running ahead must not refuse the
 * user's next sign-in for long).
 */
function notBeforeOf(eventTime: number, context: ApplyContext): number {
  const now = context.nowMs / 1000
  return Math.floor(Math.min(eventTime, now + context.clockToleranceSeconds)) + 1
}

async function readRecord(context: ApplyContext, key: string): Promise<Record_> {
  const text = await context.store.get(key)
  if (text === undefined) return {}
  try {
    const parsed = JSON.parse(text) as Record_
    return typeof parsed === 'object' && parsed !== null ? parsed : {}
  } catch {
    return {}
  }
}

/**
 * Applies one event to its targets. Resolves to what changed.
 *
 * @throws NotApplied when the revocation store queued a change; a store error as thrown.
 */
export async function applyEvent(
  action: Exclude<SignalAction, 'stream'>,
  targets: readonly SubjectTarget[],
  eventTime: number,
  context: ApplyContext,
): Promise<SignalChange[]> {
  const { gate, handles, signal } = context
  const changes: SignalChange[] = []
  if (action === 'claims') {
    for (const { issuer, kind, value } of targets) {
      if (handles === undefined) break
      stored(await handles.forget({ issuer, kind, value }))
      changes.push({ change: 'forgotten', issuer, by: kind, value, notBefore: 0 })
    }
    return changes
  }
  const revoke = (target: Parameters<Gate['revoke']>[0]) =>
    handles === undefined ? gate.revoke(target) : handles.revoke(target, signal)
  const unrevoke = (target: Parameters<Gate['unrevoke']>[0]) =>
    handles === undefined ? gate.unrevoke(target) : handles.unrevoke(target, signal)
  const notBefore = notBeforeOf(eventTime, context)
  const sessions = targets.filter((target) => target.kind === 'sid')
  // session-revoked ends the sessions named; only without one does it reach the user's tokens.
  const chosen =
    action === 'session' && sessions.length > 0
      ? sessions
      : targets.filter((target) => target.kind === 'sub')
  for (const target of chosen) {
    const { issuer, kind, value } = target
    const named = { ...(issuer === undefined ? {} : { issuer }), [kind]: value }
    if (action === 'enable') {
      if (kind !== 'sub') continue
      const key = storeKey('user', issuer ?? '', value)
      const record = await readRecord(context, key)
      // Lift only a disable that happened before this enable (a late, reordered enable must not
      // lift a newer disable).
      if (record.disabled === undefined || record.disabled > notBefore) continue
      stored(await unrevoke(named))
      changes.push({ change: 'unrevoked', issuer, by: kind, value, notBefore: 0 })
      if (record.other !== undefined) {
        stored(await revoke({ ...named, notBefore: record.other }))
        changes.push({ change: 'revoked', issuer, by: kind, value, notBefore: record.other })
      }
      await context.store.set(key, JSON.stringify({ other: record.other }), context.recordTtlMs)
      continue
    }
    stored(await revoke({ ...named, notBefore }))
    changes.push({ change: 'revoked', issuer, by: kind, value, notBefore })
    if (kind === 'sub') {
      const key = storeKey('user', issuer ?? '', value)
      const record = await readRecord(context, key)
      if (action === 'disable') record.disabled = Math.max(record.disabled ?? 0, notBefore)
      else record.other = Math.max(record.other ?? 0, notBefore)
      await context.store.set(key, JSON.stringify(record), context.recordTtlMs)
    }
  }
  return changes
}
