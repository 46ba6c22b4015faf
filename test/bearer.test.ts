import { describe, expect, it } from 'vitest'

import { isB64Token, readBearerCredentials, readCredentials } from '../src/bearer.js'
import { InvalidRequestError } from '../src/errors.js'
import { createGate } from '../src/gate/gate.js'
import type { RequestLike } from '../src/types.js'

const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln'

function request(
  authorization: string | string[] | undefined,
  extra: Partial<RequestLike> = {},
): RequestLike {
  return { headers: authorization === undefined ? {} : { authorization }, ...extra }
}

// Never fetches: credentials refused here fail before any key is looked up.
const gate = createGate({
  issuers: [
    { issuer: 'https://sso.example.com/realms/a', jwksUri: 'https://sso.example.com/certs' },
  ],
  audience: 'api',
})

describe('readBearerCredentials', () => {
  it.each([
    ['Bearer', `Bearer ${TOKEN}`],
    ['bearer', `bearer ${TOKEN}`],
    ['BEARER', `BEARER ${TOKEN}`],
    ['bEaReR', `bEaReR ${TOKEN}`],
    ['several spaces', `Bearer   ${TOKEN}`],
  ])(
    'reads the token with scheme spelled %s (RFC 6750 §2.1, case-insensitive scheme)',
    (_, value) => {
      expect(readBearerCredentials(request(value))).toBe(TOKEN)
    },
  )

  it('accepts every b64token character and trailing padding', () => {
    expect(readBearerCredentials(request('Bearer aZ09-._~+/=='))).toBe('aZ09-._~+/==')
  })

  it.each([
    ['no header', undefined],
    ['an empty header', ''],
    ['Basic', 'Basic dXNlcjpwYXNz'],
    ['Digest', 'Digest username="x"'],
    ['a scheme that starts like Bearer', `Bearerx ${TOKEN}`],
    ['DPoP', `DPoP ${TOKEN}`],
    ['a token alone', TOKEN],
  ])('returns undefined (no credentials) for %s', (_, value) => {
    expect(readBearerCredentials(request(value))).toBeUndefined()
  })

  it.each([
    ['Bearer with no token', 'Bearer'],
    ['two tokens', `Bearer ${TOKEN} ${TOKEN}`],
    ['a comma list', `Bearer ${TOKEN}, Bearer ${TOKEN}`],
    ['a tab separator', `Bearer\t${TOKEN}`],
    ['a quoted token', `Bearer "${TOKEN}"`],
    ['padding in the middle', 'Bearer ab=cd'],
    ['non-ASCII', 'Bearer tökén'],
    ['an auth-param', 'Bearer realm="x"'],
    ['a NUL byte', 'Bearer a\u0000b'],
  ])('answers invalid_request for %s', async (_, value) => {
    // The gate checks the charset only for refused credentials: this is the path requests take.
    await expect(gate.check(request(value))).rejects.toBeInstanceOf(InvalidRequestError)
  })

  it.each([TOKEN, 'aZ09-._~+/==', 'a'])('accepts %s as a b64token', (value) => {
    expect(isB64Token(value)).toBe(true)
  })

  it.each(['', `${TOKEN} ${TOKEN}`, `"${TOKEN}"`, 'ab=cd', 'tökén', 'a,b', '=abc'])(
    'refuses %j as a b64token',
    (value) => {
      expect(isB64Token(value)).toBe(false)
    },
  )

  it('throws invalid_request when the Authorization field is repeated', () => {
    const rawHeaders = [
      'Authorization',
      `Bearer ${TOKEN}`,
      'host',
      'x',
      'authorization',
      `Bearer ${TOKEN}`,
    ]
    expect(() => readBearerCredentials(request(`Bearer ${TOKEN}`, { rawHeaders }))).toThrow(
      InvalidRequestError,
    )
  })

  it('throws invalid_request when an empty Authorization field precedes a real one', () => {
    const rawHeaders = ['Authorization', '', 'Authorization', `Bearer ${TOKEN}`]
    expect(() => readBearerCredentials(request('', { rawHeaders }))).toThrow(InvalidRequestError)
  })

  it('throws invalid_request when the header value is a list', () => {
    expect(() => readBearerCredentials(request([`Bearer ${TOKEN}`, `Bearer ${TOKEN}`]))).toThrow(
      InvalidRequestError,
    )
  })

  it('accepts one Authorization field among other raw headers', () => {
    const rawHeaders = [
      'Host',
      'x',
      'Authorization',
      `Bearer ${TOKEN}`,
      'Accept',
      'application/json',
    ]
    expect(readBearerCredentials(request(`Bearer ${TOKEN}`, { rawHeaders }))).toBe(TOKEN)
  })

  it.each([['/api?access_token=abc'], ['/api?x=1&access_token='], ['/api?access_token']])(
    'throws invalid_request when a token is also in the query (%s)',
    (url) => {
      expect(() => readBearerCredentials(request(`Bearer ${TOKEN}`, { url }))).toThrow(
        InvalidRequestError,
      )
    },
  )

  it('throws invalid_request when a token is also in a parsed body', () => {
    const body = { access_token: TOKEN }
    expect(() => readBearerCredentials(request(`Bearer ${TOKEN}`, { body }))).toThrow(
      InvalidRequestError,
    )
  })

  it('never reads a token from the query string alone', () => {
    expect(
      readBearerCredentials(request(undefined, { url: `/api?access_token=${TOKEN}` })),
    ).toBeUndefined()
  })

  it('ignores query parameters that merely contain the name', () => {
    expect(
      readBearerCredentials(request(`Bearer ${TOKEN}`, { url: '/api?my_access_token=1' })),
    ).toBe(TOKEN)
  })

  it('throws a coded error with its reason and no challenge: the gate adds its own', () => {
    try {
      readBearerCredentials(request('Bearer'))
      expect.unreachable()
    } catch (error) {
      expect(error).toMatchObject({
        code: 'ERR_INVALID_REQUEST',
        reason: 'malformed_credentials',
        challenge: 'invalid_request',
        headers: {},
      })
    }
  })
})

describe('readCredentials (a gate with DPoP on)', () => {
  it.each([
    [`Bearer ${TOKEN}`, { scheme: 'Bearer', token: TOKEN }],
    [`DPoP ${TOKEN}`, { scheme: 'DPoP', token: TOKEN }],
    [`dpop  ${TOKEN}`, { scheme: 'DPoP', token: TOKEN }],
  ])('reads %s with its scheme (RFC 9449 §7.1)', (value, expected) => {
    expect(readCredentials(request(value))).toEqual(expected)
  })

  it.each(['DPoPx abc', 'DPoP-Bound abc', 'Basic abc', 'Digest x'])(
    'treats %s as another scheme: no credentials',
    (value) => {
      expect(readCredentials(request(value))).toBeUndefined()
    },
  )

  it.each(['DPoP', 'DPoP ', 'dpop   '])(
    'throws invalid_request for %j without a token',
    (value) => {
      expect(() => readCredentials(request(value))).toThrow(InvalidRequestError)
    },
  )

  it('applies the Bearer rules to DPoP: a repeated field or a token also in the query is refused', () => {
    expect(() =>
      readCredentials(
        request(`DPoP ${TOKEN}`, { rawHeaders: ['Authorization', 'x', 'authorization', 'y'] }),
      ),
    ).toThrow(InvalidRequestError)
    expect(() =>
      readCredentials(request(`DPoP ${TOKEN}`, { url: '/api?access_token=abc' })),
    ).toThrow(InvalidRequestError)
  })

  it('leaves the DPoP scheme alone for gates without DPoP', () => {
    expect(readBearerCredentials(request(`DPoP ${TOKEN}`))).toBeUndefined()
  })
})
