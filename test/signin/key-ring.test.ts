import { randomBytes } from 'node:crypto'
import { inspect } from 'node:util'

import { describe, expect, it } from 'vitest'

import { createKeyRing, KeyRingError, parseKeyRingText } from '../../src/signin/key-ring.js'

const secretA = randomBytes(32)
const secretB = randomBytes(32).toString('base64')
const AAD = 'session-1'

/** Changes one character of `text` at `at`: other bytes, never just padding bits. */
function flipAt(text: string, at: number): string {
  return `${text.slice(0, at)}${text[at] === 'A' ? 'B' : 'A'}${text.slice(at + 1)}`
}

describe('key ring', () => {
  it('encrypts under the newest key and decrypts what any key of the ring sealed', () => {
    const old = createKeyRing([{ id: 'old', secret: secretB }])
    const sealed = old.encrypt('refresh-token', AAD)
    expect(sealed.startsWith('old.')).toBe(true)
    const rotated = createKeyRing([
      { id: 'new', secret: secretA },
      { id: 'old', secret: secretB },
    ])
    expect(rotated.decrypt(sealed, AAD)).toBe('refresh-token')
    expect(rotated.encrypt('refresh-token', AAD).startsWith('new.')).toBe(true)
  })

  it('uses a fresh IV for every encryption', () => {
    const ring = createKeyRing([{ id: 'k', secret: secretA }])
    expect(ring.encrypt('same', AAD)).not.toBe(ring.encrypt('same', AAD))
  })

  it('refuses a ciphertext bound to other associated data (another session)', () => {
    const ring = createKeyRing([{ id: 'k', secret: secretA }])
    expect(ring.decrypt(ring.encrypt('token', AAD), 'session-2')).toBeUndefined()
  })

  it('refuses a ciphertext whose key left the ring, or sealed under another secret with the same id', () => {
    const sealed = createKeyRing([{ id: 'k', secret: secretA }]).encrypt('token', AAD)
    expect(createKeyRing([{ id: 'j', secret: secretA }]).decrypt(sealed, AAD)).toBeUndefined()
    expect(createKeyRing([{ id: 'k', secret: secretB }]).decrypt(sealed, AAD)).toBeUndefined()
  })

  it('refuses a ciphertext altered at any position', () => {
    const ring = createKeyRing([{ id: 'k', secret: secretA }])
    const sealed = ring.encrypt('a refresh token of some length', AAD)
    for (let at = 0; at < sealed.length; at++) {
      if (sealed[at] === '.') continue
      expect(ring.decrypt(flipAt(sealed, at), AAD)).toBeUndefined()
    }
  })

  it.each([
    ['truncated', (sealed: string) => sealed.slice(0, -4)],
    ['with a part missing', (sealed: string) => sealed.split('.').slice(0, 3).join('.')],
    ['with an extra part', (sealed: string) => `${sealed}.AAAA`],
    [
      'with a short tag',
      (sealed: string) => sealed.replace(/\.[^.]+$/, '.AAAAAAAAAAAAAAAAAAAAAA'.slice(0, 12)),
    ],
    ['empty', () => ''],
  ])('refuses a ciphertext %s', (_case, alter) => {
    const ring = createKeyRing([{ id: 'k', secret: secretA }])
    expect(ring.decrypt(alter(ring.encrypt('token', AAD)), AAD)).toBeUndefined()
  })

  it('verifies MACs made by any key of the ring, in canonical spelling only', () => {
    const old = createKeyRing([{ id: 'old', secret: secretB }])
    const rotated = createKeyRing([
      { id: 'new', secret: secretA },
      { id: 'old', secret: secretB },
    ])
    const signed = old.sign('session-id')
    expect(rotated.verify(signed)).toBe('session-id')
    expect(createKeyRing([{ id: 'new', secret: secretA }]).verify(signed)).toBeUndefined()
    expect(rotated.verify(`other-id.${signed.split('.')[1]}`)).toBeUndefined()
    const mac = signed.split('.')[1] as string
    const noncanonical = `${mac.slice(0, -1)}${String.fromCharCode(mac.charCodeAt(mac.length - 1) ^ 1)}`
    expect(rotated.verify(`session-id.${noncanonical}`)).toBeUndefined()
  })

  it.each([
    ['an empty ring', []],
    ['an id with a dot', [{ id: 'a.b', secret: secretA }]],
    [
      'a repeated id',
      [
        { id: 'k', secret: secretA },
        { id: 'k', secret: secretB },
      ],
    ],
    ['a secret shorter than 32 bytes', [{ id: 'k', secret: randomBytes(16) }]],
    ['a secret that is not base64', [{ id: 'k', secret: `${secretB}!` }]],
  ])('refuses %s, without naming a secret', (_case, keys) => {
    let error: unknown
    try {
      createKeyRing(keys as never)
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(KeyRingError)
    expect(String((error as Error).message)).not.toContain(secretB)
  })

  it('reads the environment-variable form: id=secret pairs, newest first', () => {
    expect(parseKeyRingText(` new=${secretB},old=${secretB}\n`)).toEqual([
      { id: 'new', secret: secretB },
      { id: 'old', secret: secretB },
    ])
    expect(() => parseKeyRingText(secretB)).toThrow(KeyRingError)
  })

  it('shows neither keys nor secrets in inspect() or JSON', () => {
    const ring = createKeyRing([{ id: 'k', secret: secretB }])
    expect(inspect(ring)).toBe("KeyRing { keys: 1, current: 'k' }")
    expect(JSON.stringify(ring)).toBe('{"keys":1,"current":"k"}')
  })
})
