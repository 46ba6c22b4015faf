import { describe, expect, it } from 'vitest'
import { normalizeDpopOptions } from '../src/dpop-options.js'

describe('normalizeDpopOptions', () => {
  it('is undefined without options and in mode off, so that cnf-bound tokens stay refused', () => {
    expect(normalizeDpopOptions(undefined)).toBeUndefined()
    expect(normalizeDpopOptions({})).toBeUndefined()
    expect(normalizeDpopOptions({ mode: 'off', publicBaseUrl: 'https://api.example.test' })).toBe(
      undefined,
    )
  })

  it('fills in the defaults', () => {
    expect(normalizeDpopOptions({ mode: 'allowed' })).toMatchObject({
      mode: 'allowed',
      algorithms: ['ES256', 'EdDSA', 'PS256', 'RS256'],
      maxProofAgeSeconds: 60,
      target: { kind: 'connection' },
      replay: {
        redis: undefined,
        keyPrefix: 'tollgate:dpop',
        storeTimeoutMs: 50,
        maxEntries: 100_000,
      },
      nonce: undefined,
    })
  })

  it('keeps a public base URL as origin and path prefix', () => {
    expect(
      normalizeDpopOptions({ mode: 'required', publicBaseUrl: 'https://API.example.test/v2/' })
        ?.target,
    ).toEqual({ kind: 'base', origin: 'https://api.example.test', pathPrefix: '/v2' })
  })

  it.each([
    [{ mode: 'on' }, '"dpop.mode" must be one of'],
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
    [{ mode: 'allowed', replay: { store: 'redis' } }, '"dpop.replay.store" must be an object'],
    [{ mode: 'allowed', replay: { store: { redis: {} } } }, '"dpop.replay.store.redis" must be'],
    [{ mode: 'allowed', replay: { ttl: 1 } }, '"dpop.replay.ttl" is not an option'],
    [{ mode: 'allowed', nonce: { secret: 'short' } }, '"dpop.nonce.secret" must be a string'],
    [{ mode: 'allowed', nonce: { lifetimeSeconds: 5 } }, '"dpop.nonce.lifetimeSeconds"'],
    [{ mode: 'allowed', htu: 'x' }, '"dpop.htu" is not an option'],
  ])('refuses %j', (options, message) => {
    expect(() => normalizeDpopOptions(options)).toThrow(TypeError)
    expect(() => normalizeDpopOptions(options)).toThrow(message)
  })

  it('never repeats a secret it refuses', () => {
    expect(() => normalizeDpopOptions({ mode: 'allowed', nonce: { secret: 'hunter2' } })).toThrow(
      /^(?!.*hunter2)/,
    )
  })
})
