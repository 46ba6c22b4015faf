import { inspect } from 'node:util'
import { describe, expect, it, vi } from 'vitest'

import { joinsAuthorizationFields, requestOfFetch } from '../../src/fetch/request.js'

describe('joinsAuthorizationFields', () => {
  it.each([
    ['Bearer a.b.c, Bearer d.e.f', 'two Bearer fields'],
    ['Basic dXNlcjpwYXNz, Bearer a.b.c', 'a Basic field, then a Bearer field'],
    [', Bearer a.b.c', 'an empty field, then a Bearer field'],
    ['Bearer a.b.c, ', 'a Bearer field, then an empty one'],
    ['Basic eA==, Basic eQ==', 'two Basic fields'],
    ['Bearer a.b.c, DPoP', 'a scheme alone after the comma'],
  ])('reads %j as several fields (%s)', (value) => {
    expect(joinsAuthorizationFields(value)).toBe(true)
  })

  it.each([
    ['Bearer a.b.c', 'one Bearer field'],
    ['Bearer a.b.c,d.e.f', 'a comma without the space Fetch joins with'],
    ['Digest username="u", realm="api", nonce="n"', 'auth-params of one Digest field'],
  ])('reads %j as one field (%s)', (value) => {
    expect(joinsAuthorizationFields(value)).toBe(false)
  })
})

describe('requestOfFetch', () => {
  it('gives the gate the path and query, the method, the TLS flag and lower-cased headers', () => {
    const view = requestOfFetch(
      new Request('https://api.example.test/v1/items?page=2#frag', {
        method: 'PATCH',
        headers: { 'X-Request-Id': 'r-1' },
      }),
    )
    expect(view).toMatchObject({
      url: '/v1/items?page=2',
      method: 'PATCH',
      secure: true,
      headers: { 'x-request-id': 'r-1' },
      rawHeaders: undefined,
    })
  })

  it('takes the host from the URL when the Headers carry no Host field', () => {
    const view = requestOfFetch(new Request('https://api.example.test:8443/v1/items'))
    expect(view.headers.host).toBe('api.example.test:8443')
    const proxied = requestOfFetch(
      new Request('https://internal:8443/v1/items', { headers: { host: 'api.example.test' } }),
    )
    expect(proxied.headers.host).toBe('api.example.test')
  })

  it('signals a repeated Authorization field through the raw list, as Node does', () => {
    const headers = new Headers()
    headers.append('authorization', 'Bearer a.b.c')
    headers.append('authorization', 'Bearer d.e.f')
    const view = requestOfFetch(new Request('http://api.example.test/', { headers }))
    expect(view.rawHeaders?.filter((entry) => entry === 'authorization')).toHaveLength(2)
  })
})

describe('requestOfFetch headers', () => {
  const request = () =>
    new Request('https://api.example.test/v1', {
      headers: { Authorization: 'Bearer a.b.c', 'X-Request-Id': 'r-1', Accept: 'text/plain' },
    })

  it('reads a field only when asked for, without listing the others', () => {
    const fields = request().headers
    const forEach = vi.spyOn(fields, 'forEach')
    const view = requestOfFetch({
      url: 'https://api.example.test/v1',
      method: 'GET',
      headers: fields,
    } as Request)
    expect(view.headers.authorization).toBe('Bearer a.b.c')
    expect(view.headers['x-request-id']).toBe('r-1')
    expect(view.headers['x-absent']).toBeUndefined()
    expect(forEach).not.toHaveBeenCalled()
  })

  it('reads as a record of lower-cased fields: listed, spread, serialized, checked with in', () => {
    const view = requestOfFetch(request())
    const all = {
      authorization: 'Bearer a.b.c',
      'x-request-id': 'r-1',
      accept: 'text/plain',
      host: 'api.example.test',
    }
    expect({ ...view.headers }).toEqual(all)
    expect(Object.keys(view.headers).sort()).toEqual(Object.keys(all).sort())
    expect(JSON.parse(JSON.stringify(view.headers))).toEqual(all)
    expect('accept' in view.headers).toBe(true)
    expect('x-absent' in view.headers).toBe(false)
    // Node's req.headers has lower-case names only; a name Fetch refuses is no field either.
    expect(view.headers['Accept']).toBeUndefined()
    expect(view.headers['not a name']).toBeUndefined()
    expect(view.headers.constructor).toBeUndefined()
    expect(inspect(view.headers)).toContain("'x-request-id': 'r-1'")
  })

  it('is read-only', () => {
    const view = requestOfFetch(request())
    expect(() => {
      ;(view.headers as Record<string, string>).accept = 'x'
    }).toThrow(TypeError)
    expect(view.headers.accept).toBe('text/plain')
  })
})
