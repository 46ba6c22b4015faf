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

  it('reads a cookie from several Cookie fields joined with ", " (Fetch Headers) as with "; " (Node)', () => {
    // Two fields `a=1` and `sid=abc.def`: Node and undici join them with "; ", the Fetch
    // standard's Headers (Deno, Workers) with ", ".
    expect(readCookie('a=1; sid=abc.def', 'sid')).toBe('abc.def')
    expect(readCookie('a=1, sid=abc.def', 'sid')).toBe('abc.def')
    expect(readCookie('a=1, sid=abc.def', 'a')).toBe('1')
    // Crumbs of several pairs each, and the cookie first.
    expect(readCookie('a=1; b=2, sid=abc.def; c=3', 'sid')).toBe('abc.def')
    expect(readCookie('sid=abc.def, a=1', 'sid')).toBe('abc.def')
  })

  it('trusts neither of two cookies with one name, however the fields were joined', () => {
    expect(readCookie('sid=mine, sid=theirs', 'sid')).toBeUndefined()
    expect(readCookie('a=1; sid=mine, b=2; sid=theirs', 'sid')).toBeUndefined()
    expect(readCookie(['sid=mine', 'a=1, sid=theirs'], 'sid')).toBeUndefined()
  })

  it('never reads a value planted inside another cookie’s non-conforming value beside the real one', () => {
    // A cookie whose value holds ", sid=…" (browsers accept commas in values) looks like a second
    // field: the real cookie is not silently replaced by the planted one, neither is read.
    expect(readCookie('other=x, sid=planted; sid=real', 'sid')).toBeUndefined()
    expect(readCookie('sid=real; other=x, sid=planted', 'sid')).toBeUndefined()
  })

  it('skips the pieces of another cookie’s non-conforming value that name no cookie', () => {
    expect(readCookie('other=x,y,z; sid=abc.def', 'sid')).toBe('abc.def')
    expect(readCookie('other="a, b"; sid=abc.def', 'sid')).toBe('abc.def')
    expect(readCookie('other=x,y', 'y')).toBeUndefined()
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
