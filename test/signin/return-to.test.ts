import { describe, expect, it } from 'vitest'

import { safeReturnTo } from '../../src/signin/return-to.js'

describe('returnTo', () => {
  it.each([
    ['/', '/'],
    ['/records', '/records'],
    ['/records?filter=open&page=2', '/records?filter=open&page=2'],
    ['/a/b#section', '/a/b#section'],
    ['/a/../b', '/b'],
    ['/caf%C3%A9', '/caf%C3%A9'],
    ['/a/..%2Fb', '/a/..%2Fb'],
    ['/search?q=%2F%2Fexample', '/search?q=%2F%2Fexample'],
  ])('keeps the same-origin path %j', (value, expected) => {
    expect(safeReturnTo(value)).toBe(expected)
  })

  it.each([
    '//evil.example',
    '///evil.example',
    '/\\evil.example',
    '\\\\evil.example',
    '/\\/evil.example',
    'https://evil.example/',
    'http:evil.example',
    'javascript:alert(1)',
    'data:text/html,x',
    'evil.example',
    '/%2F%2Fevil.example',
    '/%2f/evil.example',
    '/%5Cevil.example',
    '/%09/evil.example',
    '/\t/evil.example',
    '/\n/evil.example',
    '/%E0%A4%A',
    // Dot segments that resolve to `//evil` or `/\evil`: an open redirect the sign-in review found.
    '/.//evil.example',
    '/%2e//evil.example',
    '/%2E//evil.example',
    '/a/..//evil.example',
    '/%2e%2e//evil.example',
    '/a/%2e%2e//evil.example',
    '/./%5Cevil.example',
    '/.%09/evil.example',
    '/./\tevil.example',
    '/./\\evil.example',
    '/.\n//evil.example',
    // Dot segments that resolve to `//evil` only once decoded: once kept as sent, where the README
    // promised `/`.
    '/a/..%2F%2Fevil.example',
    '/.%2F%2Fevil.example',
    '/%2e%2F%2Fevil.example',
    '/a/%2e%2e%2F%2Fevil.example',
    '/a/..%2F%5Cevil.example',
    '',
    `/${'a'.repeat(2048)}`,
    undefined,
    null,
    42,
    ['/'],
  ])('refuses %j', (value) => {
    expect(safeReturnTo(value)).toBeUndefined()
  })
})
