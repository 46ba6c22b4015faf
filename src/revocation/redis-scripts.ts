/**
 * What the revocation list looks like in Redis: the Lua scripts that read and change it and the
 * wire format of its entries and messages. Everything read from Redis is parsed defensively: a
 * foreign writer on the same keys can make entries go missing, never crash the gate.
 *
 * Keys (one hash slot, `{<prefix>}`): `entries` (a hash: identity → `notBefore:expiresAt`, plus
 * the field `""` holding the data set's epoch), `removed` (tombstones: identity → expiry), `seq`
 * (the number of the last change), `log` (a Stream of the last changes, entry id `<seq>-0`, so
 * that an instance catches up with what it missed by reading only that), `sweep` (the cursor of
 * the shared sweep of expired entries). Every script does a bounded amount of work: none walks
 * the whole list (one script over 300,000 entries, measured, held Redis for 1.2 s).
 *
 * @module
 */
import type { RevocationEntry } from './list.js'

/** Changes kept in the log: an instance that missed more reloads the list in pages. */
export const LOG_LENGTH = 10_000

// Appends a change to the log. A log whose last id is not below `seq` belongs to an earlier data
// set (the sequence was lost and restarted): it is dropped, since its changes are not these.
const LOG = `
local function log(key, seq, message)
  local id = string.format('%d-0', seq)
  local added = redis.pcall('XADD', key, 'MAXLEN', '~', '${LOG_LENGTH}', id, 'm', message)
  if type(added) == 'table' and added.err then
    redis.call('DEL', key)
    redis.call('XADD', key, 'MAXLEN', '~', '${LOG_LENGTH}', id, 'm', message)
  end
end`

// Adds (keeping the later not-before and expiry), clears a tombstone, bumps the sequence, logs and
// publishes. KEYS: entries, seq, removed, log. ARGV: field, notBefore, expiresAt, channel, sentAt, origin.
export const ADD = `${LOG}
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
local message = cjson.encode({seq, 'add', ARGV[1], nb, x, tonumber(ARGV[5]), ARGV[6]})
log(KEYS[4], seq, message)
redis.call('PUBLISH', ARGV[4], message)
return seq`

// Removes and leaves a tombstone until the entry would have expired, so that a reload of an
// instance that missed the change lets the entry go instead of writing it back. KEYS: entries,
// seq, removed, log. ARGV: field, channel, sentAt, origin, expiresAt.
export const REMOVE = `${LOG}
local x = tonumber(ARGV[5]) or 0
local held = redis.call('HGET', KEYS[1], ARGV[1])
local sep = held and string.find(held, ':', 1, true)
local heldX = sep and tonumber(string.sub(held, sep + 1))
if heldX and heldX > x then x = heldX end
redis.call('HSET', KEYS[3], ARGV[1], string.format('%d', x))
redis.call('HDEL', KEYS[1], ARGV[1])
local seq = redis.call('INCR', KEYS[2])
local message = cjson.encode({seq, 'del', ARGV[1], 0, 0, tonumber(ARGV[3]), ARGV[4]})
log(KEYS[4], seq, message)
redis.call('PUBLISH', ARGV[2], message)
return seq`

// The data set's epoch (set when absent: a new data set, or an entries hash that was evicted),
// the sequence number, and up to ARGV[3] logged changes from change ARGV[2] on (none past the
// last). KEYS: entries, seq, log. ARGV: new epoch, first change, count.
export const SYNC = `
local marker = redis.call('HGET', KEYS[1], '')
local epoch = marker and string.match(marker, '^([^:]+):')
if not epoch then
  epoch = ARGV[1]
  redis.call('HSET', KEYS[1], '', epoch .. ':99999999999999')
end
local seq = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
local first = tonumber(ARGV[2])
local changes = {}
if first <= seq then
  changes = redis.call('XRANGE', KEYS[3], string.format('%d-0', first), '+', 'COUNT', ARGV[3])
end
return {epoch, string.format('%d', seq), changes}`

// One page of a full reload: HSCAN from the cursor, with the sequence number the page is as of.
// Nothing per field in Lua (the page is read as Redis's C code returns it); this process drops
// what has expired (DROP_EXPIRED). KEYS: entries, seq. ARGV: cursor, count.
export const PAGE = `
local reply = redis.call('HSCAN', KEYS[1], ARGV[1], 'COUNT', ARGV[2])
return {reply[1], redis.call('GET', KEYS[2]) or '0', reply[2]}`

// Drops these fields if they are still expired (or unreadable): one may have been revoked again
// since it was read. KEYS: entries. ARGV: now, fields.
export const DROP_EXPIRED = `
local now = tonumber(ARGV[1])
for i = 2, #ARGV do
  local value = redis.call('HGET', KEYS[1], ARGV[i])
  local sep = value and string.find(value, ':', 1, true)
  local x = sep and tonumber(string.sub(value, sep + 1))
  if value and (not x or x <= now) then redis.call('HDEL', KEYS[1], ARGV[i]) end
end
return 0`

// What the store holds for a few identities, and as of which change. KEYS: entries, seq.
// ARGV: fields.
export const LOOKUP = `
return {redis.call('GET', KEYS[2]) or '0', redis.call('HMGET', KEYS[1], unpack(ARGV))}`

// Which of these identities have a live tombstone. KEYS: removed. ARGV: now, fields.
export const TOMBSTONES = `
local now = tonumber(ARGV[1])
local found = {}
for i = 2, #ARGV do
  local x = tonumber(redis.call('HGET', KEYS[1], ARGV[i]))
  if x and x > now then found[#found + 1] = ARGV[i] end
end
return found`

// One step of the sweep every instance shares: HSCAN a page of the entries (then of the
// tombstones) from the shared cursor and drop what has expired. KEYS: entries, removed, sweep.
// ARGV: count, now.
export const SWEEP = `
local state = redis.call('GET', KEYS[3]) or 'e:0'
local which, cursor = string.match(state, '^([er]):(%d+)$')
if not which then which, cursor = 'e', '0' end
local key = which == 'e' and KEYS[1] or KEYS[2]
local reply = redis.call('HSCAN', key, cursor, 'COUNT', ARGV[1])
local now = tonumber(ARGV[2])
local found = reply[2]
for i = 1, #found, 2 do
  if found[i] ~= '' then
    local value = found[i + 1]
    local sep = string.find(value, ':', 1, true)
    local x = tonumber(sep and string.sub(value, sep + 1) or value)
    if not x or x <= now then redis.call('HDEL', key, found[i]) end
  end
end
if reply[1] == '0' then
  redis.call('SET', KEYS[3], (which == 'e' and 'r' or 'e') .. ':0')
else
  redis.call('SET', KEYS[3], which .. ':' .. reply[1])
end
return reply[1]`

// INFO is allowed in scripts (CONFIG is not); through EVAL with the list's key a Cluster runs it
// on the node that holds the list. KEYS: entries.
export const INFO_PERSISTENCE = `return redis.call('INFO', 'persistence')`

export const CLAIM = `return redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1])`

// Publishes a message on the list's channel without changing the list (nothing stored, no
// sequence number): a drop of cached verdicts. Through EVAL with the list's key, so that a
// Cluster routes it as every other script. KEYS: entries. ARGV: channel, message.
export const PUBLISH = `return redis.call('PUBLISH', ARGV[1], ARGV[2])`

const KINDS = new Set<unknown>(['jti', 'sid', 'sub', 'clientId', 'all'])

/** A change as published and logged: sequence, operation, identity, not-before, expiry, sent at, sender. */
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

/** The entry a hash field and its `notBefore:expiresAt` value describe, or `undefined`. */
export function storedEntryOf(field: string, value: string): RevocationEntry | undefined {
  const sep = value.indexOf(':')
  if (sep === -1) return undefined
  return entryOf(field, Number(value.slice(0, sep)), Number(value.slice(sep + 1)))
}

/** A published or logged change, or `undefined` for anything that is not one. */
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

/**
 * A subject whose cached verdicts every instance drops (a Shared Signals claims change): tokens
 * of `issuer` (any issuer when `undefined`) whose `sub` or `sid` is `value`.
 */
export interface VerdictSubject {
  readonly issuer: string | undefined
  readonly kind: 'sub' | 'sid'
  readonly value: string
}

/**
 * Longest drop message read: an issuer URL and a subject value at their bounds (2048 and 1024
 * characters), JSON-escaped, with room to spare. Anything longer on the channel is ignored unread.
 */
const MAX_DROP_MESSAGE = 16_384
const MAX_DROP_ISSUER = 2048
const MAX_DROP_VALUE = 1024

/**
 * The drop message, `{"drop":[issuer,kind,value],"o":origin}`: an object, so that the instances
 * of versions before it, which read only the seven-member arrays of {@link parseMessage}, ignore it.
 */
export function dropMessage(subject: VerdictSubject, origin: string): string {
  return JSON.stringify({ drop: [subject.issuer ?? '', subject.kind, subject.value], o: origin })
}

/** A drop message (bounded: see {@link MAX_DROP_MESSAGE}) and who sent it, or `undefined`. */
export function parseDrop(
  text: string,
): { readonly subject: VerdictSubject; readonly origin: string } | undefined {
  if (text.length > MAX_DROP_MESSAGE || !text.startsWith('{')) return undefined
  try {
    const { drop, o } = JSON.parse(text) as { drop?: unknown; o?: unknown }
    if (!Array.isArray(drop) || drop.length !== 3 || typeof o !== 'string') return undefined
    const [issuer, kind, value] = drop as unknown[]
    if (typeof issuer !== 'string' || issuer.length > MAX_DROP_ISSUER) return undefined
    if (kind !== 'sub' && kind !== 'sid') return undefined
    if (typeof value !== 'string' || value === '' || value.length > MAX_DROP_VALUE) return undefined
    return { subject: { issuer: issuer === '' ? undefined : issuer, kind, value }, origin: o }
  } catch {
    return undefined
  }
}

/** A log entry (`[id, ['m', message]]`) as the change it records, or `undefined`. */
export function loggedChange(item: unknown): { seq: number; message: Message | undefined } {
  const [id, fields] = Array.isArray(item) ? (item as [unknown, unknown]) : []
  const seq = typeof id === 'string' ? Number(id.slice(0, id.indexOf('-'))) : Number.NaN
  const text = Array.isArray(fields) ? fields[1] : undefined
  const message = typeof text === 'string' ? parseMessage(text) : undefined
  return { seq, message: message?.[0] === seq ? message : undefined }
}
