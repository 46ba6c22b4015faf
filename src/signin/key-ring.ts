/**
 * The key ring that protects sessions: AES-256-GCM encryption of the tokens a session holds
 * (spec, handling rules: refresh tokens stored encrypted at rest, server side) and HMAC-SHA256
 * signatures of the session cookie. Several keys, each with an id: the first encrypts and signs,
 * every one still decrypts and verifies, so keys rotate without ending sessions. node:crypto only.
 *
 * Each ring key is input keying material; the AES key and the cookie key are derived from it with
 * HKDF-SHA256 under distinct labels (RFC 5869), so one secret never serves two algorithms.
 *
 * @module
 */
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  hkdfSync,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto'
import { inspect } from 'node:util'

/** One key of the ring: an id (stored with every ciphertext) and at least 32 random bytes. */
export interface SignInKey {
  /** 1 to 32 characters of `A-Z a-z 0-9 _ -`. */
  readonly id: string
  /** At least 32 bytes: a `Buffer`, or base64 / base64url text (`openssl rand -base64 32`). */
  readonly secret: string | Uint8Array
}

/** The ring, resolved: what encrypts, decrypts, signs and verifies. */
export interface KeyRing {
  /** `kid.iv.ciphertext.tag` (base64url), under the newest key, bound to `aad`. */
  encrypt(plaintext: string, aad: string): string
  /** The plaintext, or `undefined` when the key is unknown, the data altered or `aad` differs. */
  decrypt(sealed: string, aad: string): string | undefined
  /** `value.mac` under the newest key. */
  sign(value: string): string
  /** The value of a `value.mac` whose MAC any key of the ring made; compared in constant time. */
  verify(signed: string): string | undefined
  /** The id of the key new ciphertexts use. */
  readonly currentId: string
  /** `true` when `sealed` names a key id this ring does not hold (another instance's newer ring). */
  sealedUnderUnknownKey(sealed: string): boolean
}

const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/
const IV_BYTES = 12
const TAG_BYTES = 16
const MAX_KEYS = 16

/** The bytes of canonical base64url text; `undefined` for any other spelling (malleability). */
function canonical(text: string): Buffer | undefined {
  const bytes = Buffer.from(text, 'base64url')
  return bytes.toString('base64url') === text ? bytes : undefined
}

interface DerivedKey {
  readonly id: string
  readonly aes: Buffer
  readonly mac: Buffer
}

/** Why a ring is unusable; the message names the problem and never a key. */
export class KeyRingError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'KeyRingError'
  }
}

/**
 * Parses the text form of a ring, as kept in one environment variable: `id=secret` pairs
 * separated by commas or whitespace, newest first (`2026-11=q3…,2026-05=Zx…`).
 */
export function parseKeyRingText(text: string): SignInKey[] {
  const keys: SignInKey[] = []
  for (const entry of text.split(/[\s,]+/).filter(Boolean)) {
    const equals = entry.indexOf('=')
    if (equals <= 0 || equals === entry.length - 1) {
      throw new KeyRingError('each key must be written id=secret')
    }
    keys.push({ id: entry.slice(0, equals), secret: entry.slice(equals + 1) })
  }
  return keys
}

function secretBytes(secret: unknown, index: number): Buffer {
  let bytes: Buffer
  if (typeof secret === 'string') {
    if (!BASE64.test(secret)) {
      throw new KeyRingError(`key ${index + 1} of the ring is not base64 or base64url text`)
    }
    bytes = Buffer.from(
      secret,
      secret.includes('-') || secret.includes('_') ? 'base64url' : 'base64',
    )
  } else if (secret instanceof Uint8Array) {
    bytes = Buffer.from(secret)
  } else {
    throw new KeyRingError(`key ${index + 1} of the ring has no secret`)
  }
  if (bytes.length < 32) {
    throw new KeyRingError(`key ${index + 1} of the ring is shorter than 32 bytes`)
  }
  return bytes
}

/**
 * Builds a ring from its keys (newest first).
 *
 * @throws KeyRingError when the ring is empty, an id is malformed or repeated, or a secret is
 * shorter than 32 bytes.
 */
export function createKeyRing(input: readonly SignInKey[]): KeyRing {
  if (!Array.isArray(input) || input.length === 0) throw new KeyRingError('the key ring is empty')
  if (input.length > MAX_KEYS)
    throw new KeyRingError(`the key ring holds more than ${MAX_KEYS} keys`)
  const keys = new Map<string, DerivedKey>()
  input.forEach((key, index) => {
    const id = (key as { id?: unknown } | null)?.id
    if (typeof id !== 'string' || !KEY_ID.test(id)) {
      throw new KeyRingError(
        `key ${index + 1} of the ring needs an id of 1 to 32 characters A-Z a-z 0-9 _ -`,
      )
    }
    if (keys.has(id)) throw new KeyRingError(`key id "${id}" appears twice in the ring`)
    const material = secretBytes((key as { secret?: unknown }).secret, index)
    const derive = (label: string) =>
      Buffer.from(hkdfSync('sha256', material, Buffer.alloc(0), `tollgate/signin ${label}`, 32))
    keys.set(id, { id, aes: derive('aes-256-gcm'), mac: derive('cookie hmac-sha256') })
  })
  const current = keys.get((input[0] as SignInKey).id) as DerivedKey
  const macOf = (key: DerivedKey, value: string) =>
    createHmac('sha256', key.mac).update(value).digest()

  const ring: KeyRing = {
    currentId: current.id,
    sealedUnderUnknownKey(sealed) {
      if (typeof sealed !== 'string') return false
      const parts = sealed.split('.')
      return parts.length === 4 && KEY_ID.test(parts[0] as string) && !keys.has(parts[0] as string)
    },
    encrypt(plaintext, aad) {
      const iv = randomBytes(IV_BYTES)
      const cipher = createCipheriv('aes-256-gcm', current.aes, iv, { authTagLength: TAG_BYTES })
      cipher.setAAD(Buffer.from(aad))
      const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
      return [
        current.id,
        iv.toString('base64url'),
        data.toString('base64url'),
        cipher.getAuthTag().toString('base64url'),
      ].join('.')
    },
    decrypt(sealed, aad) {
      if (typeof sealed !== 'string') return undefined
      const [id, iv, data, tag, extra] = sealed.split('.')
      if (id === undefined || iv === undefined || data === undefined || tag === undefined) {
        return undefined
      }
      const key = extra === undefined ? keys.get(id) : undefined
      if (key === undefined) return undefined
      const ivBytes = canonical(iv)
      const tagBytes = canonical(tag)
      const dataBytes = canonical(data)
      if (ivBytes === undefined || tagBytes === undefined || dataBytes === undefined)
        return undefined
      // GCM with a short tag or an odd IV is weaker: anything but what encrypt() writes is refused.
      if (ivBytes.length !== IV_BYTES || tagBytes.length !== TAG_BYTES) return undefined
      try {
        const decipher = createDecipheriv('aes-256-gcm', key.aes, ivBytes, {
          authTagLength: TAG_BYTES,
        })
        decipher.setAAD(Buffer.from(aad))
        decipher.setAuthTag(tagBytes)
        return Buffer.concat([decipher.update(dataBytes), decipher.final()]).toString('utf8')
      } catch {
        return undefined
      }
    },
    sign(value) {
      return `${value}.${macOf(current, value).toString('base64url')}`
    },
    verify(signed) {
      if (typeof signed !== 'string') return undefined
      const dot = signed.lastIndexOf('.')
      if (dot <= 0) return undefined
      const value = signed.slice(0, dot)
      // Compared as text: a non-canonical base64url spelling of the right MAC is not the MAC.
      const mac = Buffer.from(signed.slice(dot + 1))
      let valid = false
      for (const key of keys.values()) {
        const expected = Buffer.from(macOf(key, value).toString('base64url'))
        // Every key is tried, whatever matched, so the time taken says nothing about which.
        if (mac.length === expected.length && timingSafeEqual(mac, expected)) valid = true
      }
      return valid ? value : undefined
    },
  }
  const description = () => `KeyRing { keys: ${keys.size}, current: '${current.id}' }`
  Object.defineProperties(ring, {
    toJSON: { value: () => ({ keys: keys.size, current: current.id }) },
    [inspect.custom]: { value: description },
  })
  return Object.freeze(ring)
}
