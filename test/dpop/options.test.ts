import { describe, expect, it } from 'vitest'
import { normalizeDpopOptions } from '../../src/dpop/options.js'

describe('normalizeDpopOptions', () => {
  it('is undefined without options and in mode off, so that cnf-bound tokens stay refused', () => {
    expect(normalizeDpopOptions(undefined)).toBeUndefined()
    expect(normalizeDpopOptions({})).toBeUndefined()
    expect(normalizeDpopOptions({ mode: 'off', publicBaseUrl: 'https://api.example.test' })).toBe(
      undefined,
    )
  })

  it('fills in the defaults', () => {
    expect(
      normalizeDpopOptions({ mode: 'allowed', allowedHosts: ['api.example.test'] }),
    ).toMatchObject({
      mode: 'allowed',
      algorithms: ['ES256', 'EdDSA', 'PS256', 'RS256'],
      maxProofAgeSeconds: 60,
      target: { kind: 'connection' },
      replay: {
        redis: undefined,
        shared: undefined,
        keyPrefix: 'tollgate:dpop',
        storeTimeoutMs: 50,
        maxEntries: 100_000,
        maxEntriesPerKey: 10_000,
      },
      nonce: undefined,
    })
  })

  it('keeps a { shared } replay store, with the Redis key prefix and deadline defaults', () => {
    const shared = {
      increment: async () => ({ count: 1, msBeforeReset: 1 }),
      claimOnce: async () => true,
    }
    expect(
      normalizeDpopOptions({
        mode: 'allowed',
        allowedHosts: ['api.example.test'],
        replay: { store: { shared } },
      })?.replay,
    ).toMatchObject({ redis: undefined, shared, keyPrefix: 'tollgate:dpop', storeTimeoutMs: 50 })
  })

  it('keeps a public base URL as origin and path prefix', () => {
    expect(
      normalizeDpopOptions({ mode: 'required', publicBaseUrl: 'https://API.example.test/v2/' })
        ?.target,
    ).toEqual({ kind: 'base', origin: 'https://api.example.test', pathPrefix: '/v2' })
  })

  it("refuses DPoP on without publicBaseUrl or allowedHosts: Host is the client's word", () => {
    for (const mode of ['allowed', 'required']) {
      expect(() => normalizeDpopOptions({ mode })).toThrow(
        '"dpop.publicBaseUrl" or dpop.allowedHosts is required with DPoP on',
      )
      expect(() => normalizeDpopOptions({ mode, trustForwardedHeaders: true })).toThrow(
        '"dpop.publicBaseUrl" or dpop.allowedHosts is required',
      )
    }
  })

  it('keeps allowed hosts lower-cased, a host without port also on 80 and 443', () => {
    const target = normalizeDpopOptions({
      mode: 'allowed',
      allowedHosts: ['API.example.test', '127.0.0.1:3000', '[::1]:8080'],
    })?.target
    expect(target).toEqual({
      kind: 'connection',
      hosts: new Set([
        'api.example.test',
        'api.example.test:80',
        'api.example.test:443',
        '127.0.0.1:3000',
        '[::1]:8080',
      ]),
    })
  })

  it.each([
    [{ mode: 'on' }, '"dpop.mode" must be one of'],
    [{ mode: 'allowed', allowedHosts: [] }, '"dpop.allowedHosts" must be a non-empty array'],
    [{ mode: 'allowed', allowedHosts: 'a.test' }, '"dpop.allowedHosts" must be a non-empty array'],
    [{ mode: 'allowed', allowedHosts: ['https://a.test'] }, '"dpop.allowedHosts" must list hosts'],
    [{ mode: 'allowed', allowedHosts: ['a.test/x'] }, '"dpop.allowedHosts" must list hosts'],
    [{ mode: 'allowed', allowedHosts: ['u@a.test'] }, '"dpop.allowedHosts" must list hosts'],
    [{ mode: 'allowed', allowedHosts: [1] }, '"dpop.allowedHosts" must list hosts'],
    [
      { mode: 'allowed', publicBaseUrl: 'https://a.test', allowedHosts: ['a.test'] },
      '"dpop.allowedHosts" cannot be combined',
    ],
    [{ mode: 'allowed', algorithms: ['HS256'] }, '"dpop.algorithms" may only list'],
    [{ mode: 'allowed', algorithms: ['none'] }, '"dpop.algorithms" may only list'],
    [{ mode: 'allowed', algorithms: [] }, '"dpop.algorithms" must be a non-empty array'],
    [
      { mode: 'allowed', maxProofAgeSeconds: 0 },
      '"dpop.maxProofAgeSeconds" must be a whole number',
    ],
    [{ mode: 'allowed', publicBaseUrl: 'api.example.test' }, '"dpop.publicBaseUrl" must be'],
    [{ mode: 'allowed', publicBaseUrl: 'https://u:p@api.example.test' }, '"dpop.publicBaseUrl"'],
    [{ mode: 'allowed', publicBaseUrl: 'https://api.example.test/?x' }, '"dpop.publicBaseUrl"'],
    [
      { mode: 'allowed', publicBaseUrl: 'https://a.test', trustForwardedHeaders: true },
      '"dpop.trustForwardedHeaders" cannot be combined',
    ],
    [
      { mode: 'allowed', replay: { store: 'redis' } },
      `"dpop.replay.store" must be 'memory', { redis: client } or { shared: store }`,
    ],
    [
      { mode: 'allowed', replay: { store: { shared: {} } } },
      '"dpop.replay.store.shared" must be a SharedStore, an object with claimOnce(key, ttlMs)',
    ],
    [
      { mode: 'allowed', replay: { store: { shared: { increment() {} } } } },
      '"dpop.replay.store.shared" must be a SharedStore, an object with claimOnce(key, ttlMs)',
    ],
    [{ mode: 'allowed', replay: { store: { redis: {} } } }, '"dpop.replay.store.redis" must be'],
    [{ mode: 'allowed', replay: { ttl: 1 } }, '"dpop.replay.ttl" is not an option'],
    [
      { mode: 'allowed', replay: { maxEntries: 5000, maxEntriesPerKey: 5001 } },
      '"dpop.replay.maxEntriesPerKey" must be a whole number',
    ],
    [{ mode: 'allowed', replay: { maxEntriesPerKey: 99 } }, '"dpop.replay.maxEntriesPerKey"'],
    [{ mode: 'allowed', nonce: { secret: 'short' } }, '"dpop.nonce.secret" must be a string'],
    [{ mode: 'allowed', nonce: { lifetimeSeconds: 5 } }, '"dpop.nonce.lifetimeSeconds"'],
    [{ mode: 'allowed', htu: 'x' }, '"dpop.htu" is not an option'],
  ])('refuses %j', (options, message) => {
    expect(() => normalizeDpopOptions(options)).toThrow(TypeError)
    expect(() => normalizeDpopOptions(options)).toThrow(message)
  })

  it.each([
    [{ mode: 'on' }, `"dpop.mode" must be one of 'off', 'allowed', 'required' (got 'on')`],
    [
      { mode: 'allowed', publicBaseUrl: 'https://a.test', algorithms: ['ES256', 'HS256'] },
      `"dpop.algorithms" may only list RS256/384/512, PS256/384/512, ES256/384/512 and EdDSA (got 'HS256')`,
    ],
    [
      { mode: 'allowed', allowedHosts: ['https://a.test'] },
      `"dpop.allowedHosts" must list hosts as host or host:port (got 'https://a.test')`,
    ],
    [
      { mode: 'allowed', allowedHosts: ['u:hunter2@a.test'] },
      `"dpop.allowedHosts" must list hosts as host or host:port (got '***@a.test')`,
    ],
    [
      { mode: 'allowed', publicBaseUrl: 'api.example.test' },
      `"dpop.publicBaseUrl" must be an http(s) URL without credentials, query or fragment (got 'api.example.test')`,
    ],
    [
      { mode: 'allowed', publicBaseUrl: 'https://u:hunter2@api.example.test/v1?key=hunter2' },
      `(got 'https://***@api.example.test/v1?…')`,
    ],
  ])('shows the value it refuses, without credentials: %j', (options, message) => {
    expect(() => normalizeDpopOptions(options)).toThrow(message)
  })

  it('never repeats a secret it refuses', () => {
    expect(() => normalizeDpopOptions({ mode: 'allowed', nonce: { secret: 'hunter2' } })).toThrow(
      /^(?!.*hunter2)/,
    )
  })
})
