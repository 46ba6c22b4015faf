/**
 * A session as stored: the issuer and lifetime in clear; the user (subject, `sid`, a few profile
 * claims) and the tokens each sealed with AES-256-GCM under the key ring, with the session id, the
 * issuer and the field's purpose as associated data, so a store dump names no user and holds no
 * token. A ciphertext copied to another session, another issuer or
 * another field does not open. The store key is a hash of the session id: the store never holds
 * the id, so reading it is not enough to ride a session.
 *
 * @module
 */
import { createHash, randomBytes } from 'node:crypto'

import type { KeyRing } from './key-ring.js'

/** A token the session holds, decrypted, with when it expires (ms since the epoch). */
export interface HeldToken {
  readonly token: string
  readonly expiresAt: number
}

/** A session, decrypted, for one request. */
export interface OpenSession {
  readonly issuer: string
  readonly subject: string
  readonly sid: string | undefined
  readonly createdAt: number
  readonly expiresAt: number
  readonly claims: Readonly<Record<string, unknown>>
  readonly refreshToken: string | undefined
  readonly idToken: string | undefined
  /** Access tokens by product name (`''`: the sign-in's own). */
  readonly accessTokens: Readonly<Record<string, HeldToken>>
  /** Bumped by every write: another instance's refresh shows as a new generation. */
  readonly generation: number
}

interface SealedSession {
  readonly v: 1
  readonly iss: string
  readonly createdAt: number
  readonly expiresAt: number
  /** `{ sub, sid, claims }`, sealed. */
  readonly user: string
  readonly rt?: string
  readonly idt?: string
  readonly at: Record<string, { readonly t: string; readonly exp: number }>
  readonly gen: number
}

/** Profile claims kept from the ID token: enough to greet the user, nothing that authenticates. */
export const PROFILE_CLAIMS = [
  'sub',
  'name',
  'given_name',
  'family_name',
  'preferred_username',
  'email',
  'email_verified',
  'locale',
] as const

/** A new session id: 256 random bits, base64url. Cookie-safe. */
export function newSessionId(): string {
  return randomBytes(32).toString('base64url')
}

/** The store key of a session id. */
export function storeKeyOf(sessionId: string): string {
  return createHash('sha256').update(`tollgate/signin session\0${sessionId}`).digest('base64url')
}

/** The index under which back-channel logout finds sessions by `sid` or `sub` (hashed). */
export function indexOf(kind: 'sid' | 'sub', issuer: string, value: string): string {
  return `${kind}.${createHash('sha256').update(`${issuer}\0${value}`).digest('base64url')}`
}

/** Associated data of a sealed field: what the ciphertext belongs to. */
function aad(sessionId: string, issuer: string, purpose: string): string {
  return `tollgate/signin v1\0${purpose}\0${sessionId}\0${issuer}`
}

/** Seals a session under the ring's newest key (so every write also re-encrypts old ciphertexts). */
export function sealSession(ring: KeyRing, sessionId: string, session: OpenSession): string {
  const seal = (value: string, purpose: string) =>
    ring.encrypt(value, aad(sessionId, session.issuer, purpose))
  const at: SealedSession['at'] = {}
  for (const [product, held] of Object.entries(session.accessTokens)) {
    at[product] = { t: seal(held.token, `access_token:${product}`), exp: held.expiresAt }
  }
  const user = { sub: session.subject, sid: session.sid, claims: session.claims }
  const sealed: SealedSession = {
    v: 1,
    iss: session.issuer,
    createdAt: session.createdAt,
    expiresAt: session.expiresAt,
    user: seal(JSON.stringify(user), 'user'),
    ...(session.refreshToken === undefined
      ? {}
      : { rt: seal(session.refreshToken, 'refresh_token') }),
    ...(session.idToken === undefined ? {} : { idt: seal(session.idToken, 'id_token') }),
    at,
    gen: session.generation,
  }
  return JSON.stringify(sealed)
}

/**
 * `true` when a stored session was sealed under a key id `ring` does not hold: during a rolling
 * deploy that rotates keys, an instance still on the old ring meets sessions sealed by one on the
 * new ring. Such a session is not this instance's to end.
 */
export function sealedUnderUnknownKey(ring: KeyRing, raw: string): boolean {
  try {
    const value = JSON.parse(raw) as { user?: unknown }
    return typeof value?.user === 'string' && ring.sealedUnderUnknownKey(value.user)
  } catch {
    return false
  }
}

/**
 * Opens a stored session for `sessionId` at `issuer`: `undefined` when anything does not parse,
 * names another issuer, or does not decrypt (tampered, unknown key, another session's data).
 */
export function openSession(
  ring: KeyRing,
  sessionId: string,
  issuer: string,
  raw: string,
): OpenSession | undefined {
  let value: SealedSession
  try {
    value = JSON.parse(raw) as SealedSession
  } catch {
    return undefined
  }
  if (
    typeof value !== 'object' ||
    value === null ||
    value.v !== 1 ||
    value.iss !== issuer ||
    typeof value.createdAt !== 'number' ||
    typeof value.expiresAt !== 'number' ||
    typeof value.gen !== 'number' ||
    typeof value.at !== 'object' ||
    value.at === null
  ) {
    return undefined
  }
  const open = (sealed: unknown, purpose: string) =>
    typeof sealed === 'string' ? ring.decrypt(sealed, aad(sessionId, issuer, purpose)) : undefined
  const userText = open(value.user, 'user')
  if (userText === undefined) return undefined
  let user: { sub?: unknown; sid?: unknown; claims?: unknown }
  try {
    user = JSON.parse(userText) as typeof user
  } catch {
    return undefined
  }
  if (typeof user.sub !== 'string' || typeof user.claims !== 'object' || user.claims === null) {
    return undefined
  }
  let refreshToken: string | undefined
  if (value.rt !== undefined) {
    refreshToken = open(value.rt, 'refresh_token')
    if (refreshToken === undefined) return undefined
  }
  let idToken: string | undefined
  if (value.idt !== undefined) {
    idToken = open(value.idt, 'id_token')
    if (idToken === undefined) return undefined
  }
  const accessTokens: Record<string, HeldToken> = {}
  for (const [product, entry] of Object.entries(value.at)) {
    const token = open(entry?.t, `access_token:${product}`)
    if (token === undefined || typeof entry.exp !== 'number') return undefined
    accessTokens[product] = { token, expiresAt: entry.exp }
  }
  return {
    issuer,
    subject: user.sub,
    sid: typeof user.sid === 'string' ? user.sid : undefined,
    createdAt: value.createdAt,
    expiresAt: value.expiresAt,
    claims: user.claims as Record<string, unknown>,
    refreshToken,
    idToken,
    accessTokens,
    generation: value.gen,
  }
}
