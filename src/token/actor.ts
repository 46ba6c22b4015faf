/**
 * The actor chain of a verified token (RFC 8693 §4.1 `act`), read once per verified token into
 * `auth.actor`. What the gate does with it is `gate/actors.ts`.
 *
 * @module
 */
import type { Actor, TokenClaims } from '../types.js'
import { isRecord } from '../validate.js'

/** Chains longer than this are not even read: they are refused as too deep whatever the option. */
export const MAX_READ_DEPTH = 16

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined
}

/**
 * The actor chain of verified claims: `undefined` without `act`, `null` when `act` (or one nested
 * in it) is not an object, or the chain is longer than tollgate reads.
 */
export function actorOf(claims: TokenClaims): Actor | undefined | null {
  const act = claims['act']
  if (act === undefined) return undefined
  return readActor(act, 1)
}

function readActor(act: unknown, depth: number): Actor | null {
  if (!isRecord(act) || depth > MAX_READ_DEPTH) return null
  const { act: previous, ...own } = act
  let actor: Actor | undefined
  if (previous !== undefined) {
    const before = readActor(previous, depth + 1)
    if (before === null) return null
    actor = before
  }
  return Object.freeze({
    subject: text(own['sub']),
    clientId: text(own['client_id']),
    issuer: text(own['iss']),
    claims: Object.freeze(own),
    actor,
  })
}

/** How many actors a chain has (`act` alone is 1). */
export function chainDepth(actor: Actor | undefined): number {
  let depth = 0
  for (let at = actor; at !== undefined; at = at.actor) depth++
  return depth
}

/** The name an event gives an actor: its `sub`, else its `client_id`. */
export function actorName(actor: Actor | undefined): string | undefined {
  return actor === undefined ? undefined : (actor.subject ?? actor.clientId)
}
