import { describe, expect, it } from 'vitest'

import { parseCompactJWS } from '../../src/token/jws.js'

const b64 = (value: string | Buffer) => Buffer.from(value).toString('base64url')
const HEADER = b64('{"alg":"RS256","kid":"k1"}')
const PAYLOAD = b64('{"iss":"https://sso.example.com/realms/a","exp":1}')
const SIGNATURE = b64(Buffer.alloc(256, 7))

describe('parseCompactJWS', () => {
  it('parses a compact JWS into header, payload, signing input and signature bytes', () => {
    const parsed = parseCompactJWS(`${HEADER}.${PAYLOAD}.${SIGNATURE}`)
    expect(parsed?.header).toEqual({ alg: 'RS256', kid: 'k1' })
    expect(parsed?.payload).toMatchObject({ exp: 1 })
    expect(parsed?.signingInput).toBe(`${HEADER}.${PAYLOAD}`)
    expect(parsed?.signature.length).toBe(256)
  })

  it.each([
    ['an empty string', ''],
    ['one segment', HEADER],
    ['two segments', `${HEADER}.${PAYLOAD}`],
    ['an empty signature (unsecured JWS)', `${HEADER}.${PAYLOAD}.`],
    ['an empty header', `.${PAYLOAD}.${SIGNATURE}`],
    ['an empty payload', `${HEADER}..${SIGNATURE}`],
    ['four segments', `${HEADER}.${PAYLOAD}.${SIGNATURE}.x`],
    ['five segments (JWE)', `${HEADER}.a.b.c.d`],
    ['standard base64 characters', `${HEADER}.${PAYLOAD}.ab+/`],
    ['base64 padding', `${HEADER}.${PAYLOAD}.YQ==`],
    ['an impossible length', `${HEADER}.${PAYLOAD}.abcde`],
    ['non-canonical trailing bits (2 chars)', `${HEADER}.${PAYLOAD}.YR`],
    ['non-canonical trailing bits (3 chars)', `${HEADER}.${PAYLOAD}.YWJ`],
    ['whitespace', `${HEADER}.${PAYLOAD} .${SIGNATURE}`],
    [
      'a character Node would truncate to "A"',
      `${HEADER}.${PAYLOAD}.${SIGNATURE.slice(0, -1)}\u0141`,
    ],
    ['a character Node would truncate to "+"', `${HEADER}.${PAYLOAD}.ab\u012bd`],
    ['a NUL byte', `${HEADER}.${PAYLOAD}.ab\u0000d`],
    ['a header that is not JSON', `${b64('alg')}.${PAYLOAD}.${SIGNATURE}`],
    ['a header that is an array', `${b64('["RS256"]')}.${PAYLOAD}.${SIGNATURE}`],
    ['a header that is null', `${b64('null')}.${PAYLOAD}.${SIGNATURE}`],
    ['a payload that is a string', `${HEADER}.${b64('"x"')}.${SIGNATURE}`],
    ['a payload that is a number', `${HEADER}.${b64('1')}.${SIGNATURE}`],
    [
      'a payload in invalid UTF-8',
      `${HEADER}.${b64(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]))}.${SIGNATURE}`,
    ],
    ['a JSON serialization', JSON.stringify({ payload: PAYLOAD, signatures: [] })],
  ])('refuses %s', (_, token) => {
    expect(parseCompactJWS(token)).toBeUndefined()
  })

  it('accepts canonical spellings of every length class', () => {
    for (const bytes of [1, 2, 3]) {
      const signature = b64(Buffer.alloc(bytes, 0xff))
      expect(parseCompactJWS(`${HEADER}.${PAYLOAD}.${signature}`)).toBeDefined()
    }
  })

  it('keeps __proto__ as a plain own claim without touching prototypes', () => {
    const payload = b64('{"__proto__":{"admin":true},"constructor":{"x":1}}')
    const parsed = parseCompactJWS(`${HEADER}.${payload}.${SIGNATURE}`)
    expect(Object.hasOwn(parsed?.payload ?? {}, '__proto__')).toBe(true)
    expect(({} as Record<string, unknown>).admin).toBeUndefined()
    expect(Object.getPrototypeOf(parsed?.payload)).toBe(Object.prototype)
  })
})
