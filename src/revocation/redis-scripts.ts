/**
 * What the revocation list looks like in Redis: the Lua scripts that change it (each updates the
 * hash and the sequence number and publishes the change atomically) and the wire format of the
 * entries and messages. Everything read from Redis is parsed defensively: a foreign writer on the
 * same keys can make entries go missing, never crash the gate.
 *
 * @module
 */
import type { RevocationEntry } from './list.js'

// Adds (keeping the later not-before and expiry), clears a tombstone, bumps the sequence,
// publishes. KEYS: entries, seq, removed. ARGV: field, notBefore, expiresAt, channel, sentAt, origin.
export const ADD = `
redis.call('HDEL', KEYS[3], ARGV[1])
local nb = tonumber(ARGV[2])
local x = tonumber(ARGV[3])
local held = redis.call('HGET', KEYS[1], ARGV[1])
if held then
  local sep = string.find(held, ':', 1, true)
  local heldNb = sep and tonumber(string.sub(held, 1, sep - 1))
  local heldX = sep and tonumber(string.sub(held, sep + 1))
  if heldNb and heldX then
    nb = math.max(nb, heldNb)
    x = math.max(x, heldX)
  end
end
redis.call('HSET', KEYS[1], ARGV[1], string.format('%d:%d', nb, x))
local seq = redis.call('INCR', KEYS[2])
redis.call('PUBLISH', ARGV[4], cjson.encode({seq, 'add', ARGV[1], nb, x, tonumber(ARGV[5]), ARGV[6]}))
return seq`

// Removes and leaves a tombstone until the entry would have expired, so that a resync of an
// instance that missed the message lets the entry go instead of writing it back. KEYS: entries,
// seq, removed. ARGV: field, channel, sentAt, origin, expiresAt.
export const REMOVE = `
local x = tonumber(ARGV[5]) or 0
local held = redis.call('HGET', KEYS[1], ARGV[1])
local sep = held and string.find(held, ':', 1, true)
local heldX = sep and tonumber(string.sub(held, sep + 1))
if heldX and heldX > x then x = heldX end
redis.call('HSET', KEYS[3], ARGV[1], string.format('%d', x))
redis.call('HDEL', KEYS[1], ARGV[1])
local seq = redis.call('INCR', KEYS[2])
redis.call('PUBLISH', ARGV[2], cjson.encode({seq, 'del', ARGV[1], 0, 0, tonumber(ARGV[3]), ARGV[4]}))
return seq`

// Drops expired (and unreadable) entries and tombstones and returns {epoch, seq, {field, value,
// …}, {tombstone field, …}}. The epoch is set once per Redis data set: a new one means Redis lost
// its data. KEYS: entries, seq, epoch, removed. ARGV: now, new epoch.
export const SNAPSHOT = `
redis.call('SET', KEYS[3], ARGV[2], 'NX')
local now = tonumber(ARGV[1])
local all = redis.call('HGETALL', KEYS[1])
local entries = {}
for i = 1, #all, 2 do
  local sep = string.find(all[i + 1], ':', 1, true)
  local x = sep and tonumber(string.sub(all[i + 1], sep + 1))
  if not x or x <= now then
    redis.call('HDEL', KEYS[1], all[i])
  else
    entries[#entries + 1] = all[i]
    entries[#entries + 1] = all[i + 1]
  end
end
local tombs = redis.call('HGETALL', KEYS[4])
local removed = {}
for i = 1, #tombs, 2 do
  local x = tonumber(tombs[i + 1])
  if not x or x <= now then
    redis.call('HDEL', KEYS[4], tombs[i])
  else
    removed[#removed + 1] = tombs[i]
  end
end
return {redis.call('GET', KEYS[3]), redis.call('GET', KEYS[2]) or '0', entries, removed}`

// INFO is allowed in scripts (CONFIG is not); through EVAL with the list's key a Cluster runs it
// on the node that holds the list. KEYS: entries.
export const INFO_PERSISTENCE = `return redis.call('INFO', 'persistence')`

export const CLAIM = `return redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1])`

const KINDS = new Set<unknown>(['jti', 'sid', 'sub', 'clientId', 'all'])

/** A change as published: sequence, operation, identity, not-before, expiry, sent at, sender. */
export type Message = [
  seq: number,
  op: 'add' | 'del',
  field: string,
  nb: number,
  x: number,
  sentAt: number,
  origin: string,
]

/** The entry a stored field and value describe, or `undefined` for anything malformed. */
export function entryOf(
  field: string,
  notBefore: number,
  expiresAt: number,
): RevocationEntry | undefined {
  try {
    const [issuer, kind, value] = JSON.parse(field) as [string, RevocationEntry['kind'], string]
    if (typeof issuer !== 'string' || typeof value !== 'string') return undefined
    if (!KINDS.has(kind)) return undefined
    if (!Number.isFinite(notBefore) || !Number.isFinite(expiresAt)) return undefined
    return { issuer, kind, value, notBefore, expiresAt }
  } catch {
    return undefined
  }
}

/** A published change, or `undefined` for anything that is not one. */
export function parseMessage(text: string): Message | undefined {
  try {
    const message = JSON.parse(text) as unknown
    if (!Array.isArray(message) || message.length !== 7) return undefined
    const [seq, op, field] = message as unknown[]
    if (typeof seq !== 'number' || (op !== 'add' && op !== 'del') || typeof field !== 'string') {
      return undefined
    }
    return message as Message
  } catch {
    return undefined
  }
}
