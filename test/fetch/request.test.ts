import { describe, expect, it } from 'vitest'

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
