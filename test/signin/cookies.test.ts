import { describe, expect, it } from 'vitest'

import { readCookie, serializeCookie } from '../../src/signin/cookies.js'

describe('cookies', () => {
  it('reads a cookie among others, from one or several Cookie fields', () => {
    expect(readCookie('a=1; sid=abc.def; b=2', 'sid')).toBe('abc.def')
    expect(readCookie(['a=1', 'sid=xyz'], 'sid')).toBe('xyz')
    expect(readCookie('a=1', 'sid')).toBeUndefined()
    expect(readCookie(undefined, 'sid')).toBeUndefined()
  })

  it('trusts neither of two cookies with one name (a sibling subdomain may have set one)', () => {
    expect(readCookie('sid=mine; sid=theirs', 'sid')).toBeUndefined()
  })

  it('reads a cookie from several Cookie fields joined with "; ", as hosts join them', () => {
    expect(readCookie('a=1; sid=abc.def', 'sid')).toBe('abc.def')
    expect(readCookie(['a=1', 'sid=abc.def'], 'sid')).toBe('abc.def')
  })

  it('never reads a value planted after a comma inside another cookie’s value', () => {
    // Browsers accept commas in values: a sibling domain's cookie `other=x, sid=planted` must not
    // pose as `sid`, alone or beside the real one. The price: a host that joins fields with ", "
    // reads no `sid` at all (signed out).
    expect(readCookie('other=x, sid=planted', 'sid')).toBeUndefined()
    expect(readCookie('other=x, sid=planted; sid=real', 'sid')).toBe('real')
    expect(readCookie('a=1, sid=abc.def', 'sid')).toBeUndefined()
    expect(readCookie('other=x,y,z; sid=abc.def', 'sid')).toBe('abc.def')
  })

  it('writes HttpOnly always, Secure when asked, and expires a deleted cookie', () => {
    expect(serializeCookie('sid', 'v', { path: '/', secure: true, sameSite: 'Lax' })).toBe(
      'sid=v; Path=/; HttpOnly; SameSite=Lax; Secure',
    )
    expect(
      serializeCookie('sid', '', { path: '/cb', secure: false, sameSite: 'Lax', maxAgeSeconds: 0 }),
    ).toBe(
      'sid=; Path=/cb; HttpOnly; SameSite=Lax; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT',
    )
  })
})
