/**
 * The test issuer's Token Status Lists, as docs/testing.md describes them: served at
 * `{issuer}/statuslists/{name}` as a Status List Token signed with the realm's key, 2 bits and
 * 1,024 statuses and a 60 s `ttl` by default, statuses set by the test from the next fetch on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { decodeStatusList } from '../../src/status/bits.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'

let issuer: TestIssuer
beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'] })
})
afterAll(async () => {
  await issuer.close()
})

const payloadOf = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split('.')[1] as string, 'base64url').toString()) as Record<
    string,
    unknown
  >

describe('createTestIssuer().statusList()', () => {
  it('serves a signed Status List Token at {issuer}/statuslists/{name}, with the documented defaults', async () => {
    const list = issuer.statusList('defaults')
    expect(list.uri).toBe(`${issuer.issuer('acme')}/statuslists/defaults`)
    expect(list.reference(7)).toEqual({ status_list: { idx: 7, uri: list.uri } })
    const response = await fetch(list.uri)
    expect(response.headers.get('content-type')).toBe('application/statuslist+jwt')
    const jwt = await response.text()
    const header = JSON.parse(Buffer.from(jwt.split('.')[0] as string, 'base64url').toString())
    expect(header.typ).toBe('statuslist+jwt')
    expect(issuer.jwks('acme').keys.map((key) => key.kid)).toContain(header.kid)
    const payload = payloadOf(jwt)
    expect(payload).toMatchObject({ sub: list.uri, ttl: 60 })
    const { bits, lst } = payload.status_list as { bits: 2; lst: string }
    expect(bits).toBe(2)
    const decoded = await decodeStatusList(lst, bits, 1 << 20)
    expect(typeof decoded === 'string' ? decoded : decoded.size).toBe(1024)
    expect(list.fetchCount).toBe(1)
  })

  it('serves a status set by the test from the next fetch on, and returns the same list by name', async () => {
    const list = issuer.statusList('set', { bits: 1, size: 16, ttlSeconds: 5 })
    list.set(3, 1)
    expect(issuer.statusList('set')).toBe(list)
    expect(list.get(3)).toBe(1)
    const payload = payloadOf(await (await fetch(list.uri)).text())
    const { lst } = payload.status_list as { lst: string }
    const decoded = await decodeStatusList(lst, 1, 1 << 20)
    if (typeof decoded === 'string') throw new Error(decoded)
    expect([decoded.at(2), decoded.at(3), decoded.at(16)]).toEqual([0, 1, undefined])
    expect(payload.ttl).toBe(5)
  })

  it('refuses a status its bits cannot hold, an index outside the list, and a bad name', () => {
    const list = issuer.statusList('bounds', { bits: 1, size: 8 })
    expect(() => list.set(0, 2)).toThrow(RangeError)
    expect(() => list.set(8, 1)).toThrow(RangeError)
    expect(() => issuer.statusList('../x')).toThrow(TypeError)
    expect(() => issuer.statusList('bits', { bits: 3 as never })).toThrow(TypeError)
  })

  it('answers 404 for a list it does not publish', async () => {
    expect((await fetch(`${issuer.issuer('acme')}/statuslists/none`)).status).toBe(404)
  })
})
