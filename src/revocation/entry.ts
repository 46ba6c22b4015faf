/**
 * A revocation target (`gate.revoke()`, `gate.unrevoke()`, the `load` hook) checked and turned
 * into the entry the list holds: issuer, kind, value, not-before, and the expiry past which no
 * token it matches can still be valid.
 *
 * @module
 */
import type { RevocationEntry, RevocationKind } from './list.js'
import type { RevokeOptions } from './target.js'

export const SELECTORS = ['jti', 'sid', 'sub', 'clientId', 'all'] as const
const TARGET_KEYS = new Set<string>(['issuer', 'notBefore', ...SELECTORS])
const MAX_VALUE_LENGTH = 1024
const MAX_FUTURE_SECONDS = 3600

/** What an entry's validity depends on besides the target. */
export interface EntryRules {
  readonly issuers: readonly string[]
  readonly clockToleranceSeconds: number
  readonly maxTokenLifetimeSeconds: number
}

function invalidTarget(method: string, problem: string): never {
  throw new TypeError(`gate.${method}(target): ${problem}`)
}

/**
 * The entry `target` names, as of `nowMs`.
 *
 * @throws TypeError `gate.<method>(target): …` saying what to change.
 */
export function entryOfTarget(
  target: RevokeOptions,
  method: string,
  rules: EntryRules,
  nowMs: number,
): RevocationEntry {
  const { issuers } = rules
  if (typeof target !== 'object' || target === null) invalidTarget(method, 'must be an object')
  for (const key of Object.keys(target)) {
    if (!TARGET_KEYS.has(key))
      invalidTarget(method, `"${key}" is not a field; use one of ${[...TARGET_KEYS].join(', ')}`)
  }
  const issuer = target.issuer ?? (issuers.length === 1 ? issuers[0] : undefined)
  if (typeof issuer !== 'string' || !issuers.includes(issuer)) {
    invalidTarget(
      method,
      '"issuer" must be one of the configured issuers (required when there are several)',
    )
  }
  const given = SELECTORS.filter((name) => target[name] !== undefined)
  if (given.length !== 1) {
    invalidTarget(method, 'needs exactly one of jti, sid, sub, clientId or all: true')
  }
  const kind = given[0] as RevocationKind
  const value = kind === 'all' ? '' : target[kind as Exclude<RevocationKind, 'all'>]
  if (
    kind === 'all'
      ? target.all !== true
      : typeof value !== 'string' || value === '' || value.length > MAX_VALUE_LENGTH
  ) {
    invalidTarget(
      method,
      `"${kind}" must be ${kind === 'all' ? 'true' : `a string of 1 to ${MAX_VALUE_LENGTH} characters`}`,
    )
  }
  const now = nowMs / 1000
  const tolerance = rules.clockToleranceSeconds
  // The gate admits an `iat` up to one tolerance ahead of this host (a provider's clock running
  // fast): such a token was issued before the call too, so the default covers it.
  const requested = target.notBefore ?? Math.floor(now) + 1 + tolerance
  if (
    typeof requested !== 'number' ||
    !Number.isFinite(requested) ||
    requested > now + MAX_FUTURE_SECONDS
  ) {
    invalidTarget(
      method,
      '"notBefore" must be a time in seconds since the epoch, at most an hour ahead',
    )
  }
  // Whole seconds, as `iat` is and as the store keeps it; rounding up never lets a token through.
  const notBefore = Math.ceil(requested)
  const maxLifetime = rules.maxTokenLifetimeSeconds
  // A token the entry matches lives at most maxLifetime from its iat and is accepted one
  // tolerance past its exp: past this, every such token has expired and the entry can go. A
  // not-before entry matches iat < notBefore only. A jti entry matches any iat, and the gate
  // accepts an iat up to one tolerance ahead of now: that is a second tolerance.
  const expiresAt =
    kind === 'jti'
      ? (Math.ceil(now) + tolerance + maxLifetime + tolerance) * 1000
      : (Math.max(notBefore, Math.ceil(now)) + maxLifetime + tolerance) * 1000
  return { issuer, kind, value: value as string, notBefore, expiresAt }
}
