import { describe, expect, it } from 'vitest'
import { type GateOptions, normalizeOptions } from '../../src/gate/options.js'
import { normalizeRevocationOptions } from '../../src/revocation/options.js'
import { keycloak } from '../../src/token/issuers.js'

const ISSUERS = keycloak({ authUrl: 'https://sso.example.com', realms: ['acme'] })
/** Enough of an ioredis client for validation; never connected. */
const fakeRedis = { status: 'wait', duplicate() {}, eval() {} }

describe('normalizeRevocationOptions', () => {
  it('fills every default', () => {
    expect(normalizeRevocationOptions({}, 86_400)).toEqual({
      redis: undefined,
      maxTokenLifetimeSeconds: 86_400,
      keyPrefix: 'tollgate:rv',
      onStoreError: 'enforce-known',
      denyAfterMs: 10_000,
      resyncIntervalMs: 60_000,
      storeTimeoutMs: 1000,
      callbacks: undefined,
      untilSynced: 'deny',
      load: undefined,
      reloadIntervalMs: undefined,
    })
  })

  it('takes a reload interval with a load hook', () => {
    const load = async () => []
    expect(normalizeRevocationOptions({ load, reloadIntervalMs: 30_000 }, 86_400)).toMatchObject({
      load,
      reloadIntervalMs: 30_000,
    })
  })

  it('takes the until-synced policy and a load hook', () => {
    const load = async () => []
    const normalized = normalizeRevocationOptions({ untilSynced: 'enforce-known', load }, 86_400)
    expect(normalized.untilSynced).toBe('enforce-known')
    expect(normalized.load).toBe(load)
  })

  it('normalizes the callbacks with one client id or several', () => {
    expect(
      normalizeRevocationOptions({ callbacks: { clientIds: 'gateway' } }, 86_400).callbacks,
    ).toEqual({
      clientIds: new Set(['gateway']),
      maxAgeSeconds: 120,
      requireExp: true,
    })
    const several = normalizeRevocationOptions(
      { callbacks: { clientIds: ['gateway', 'office'], maxAgeSeconds: 30 } },
      86_400,
    )
    expect(several.callbacks).toEqual({
      clientIds: new Set(['gateway', 'office']),
      maxAgeSeconds: 30,
      requireExp: true,
    })
    expect(
      normalizeRevocationOptions({ callbacks: { clientIds: 'gateway', requireExp: false } }, 86_400)
        .callbacks?.requireExp,
    ).toBe(false)
  })

  it('takes an ioredis-shaped client as the store', () => {
    expect(normalizeRevocationOptions({ store: { redis: fakeRedis } }, 86_400).redis).toBe(
      fakeRedis,
    )
    expect(normalizeRevocationOptions({ store: 'memory' }, 86_400).redis).toBeUndefined()
  })

  it('is reached through createGate options and frozen', () => {
    const normalized = normalizeOptions({ issuers: ISSUERS, audience: 'gateway', revocation: {} })
    expect(Object.isFrozen(normalized.revocation)).toBe(true)
  })

  it("bounds token lifetimes by the gate's maxTokenLifetimeSeconds, a day unless set", () => {
    const base = { issuers: ISSUERS, audience: 'gateway', revocation: {} }
    const byDefault = normalizeOptions(base)
    expect(byDefault.revocation?.maxTokenLifetimeSeconds).toBe(86_400)
    expect(byDefault.claims.maxTokenLifetimeSeconds).toBe(86_400)
    const set = normalizeOptions({ ...base, maxTokenLifetimeSeconds: 3600 })
    expect(set.revocation?.maxTokenLifetimeSeconds).toBe(3600)
    expect(set.claims.maxTokenLifetimeSeconds).toBe(3600)
    expect(
      normalizeOptions({ issuers: ISSUERS, audience: 'gateway' }).claims.maxTokenLifetimeSeconds,
    ).toBeUndefined()
  })

  it.each([
    [null, '"revocation" must be an object'],
    [[], '"revocation" must be an object'],
    ['redis', '"revocation" must be an object'],
    [{ stores: 'memory' }, '"revocation.stores" is not an option'],
    [{ store: 'redis' }, '"revocation.store" must be \'memory\' or { redis: client }'],
    [{ store: { redis: fakeRedis, extra: 1 } }, '"revocation.store" must be'],
    [{ store: { redis: {} } }, '"revocation.store.redis" must be an ioredis Redis or Cluster'],
    [{ store: { redis: { status: 'ready', eval() {} } } }, '"revocation.store.redis" must be'],
    [{ maxTokenLifetimeSeconds: 3600 }, '"revocation.maxTokenLifetimeSeconds" is not an option'],
    [{ keyPrefix: '' }, '"revocation.keyPrefix" must be 1 to 64 printable'],
    [{ keyPrefix: 'a{b}' }, '"revocation.keyPrefix"'],
    [{ keyPrefix: 'has space' }, '"revocation.keyPrefix"'],
    [{ keyPrefix: 'x'.repeat(65) }, '"revocation.keyPrefix"'],
    [{ onStoreError: 'allow' }, '"revocation.onStoreError" must be one of'],
    [{ denyAfterMs: -1 }, '"revocation.denyAfterMs"'],
    [{ denyAfterMs: 600_001 }, '"revocation.denyAfterMs"'],
    [{ resyncIntervalMs: 999 }, '"revocation.resyncIntervalMs"'],
    [{ storeTimeoutMs: 0 }, '"revocation.storeTimeoutMs"'],
    [{ untilSynced: 'allow' }, "\"revocation.untilSynced\" must be one of 'deny', 'enforce-known'"],
    [{ load: [] }, '"revocation.load" must be a function'],
    [
      { reloadIntervalMs: 30_000 },
      '"revocation.reloadIntervalMs" needs "revocation.load": give the function that returns the revocations your application recorded',
    ],
    [
      { load: () => [], reloadIntervalMs: 999 },
      '"revocation.reloadIntervalMs" must be a whole number from 1000 to 3600000',
    ],
    [{ load: () => [], reloadIntervalMs: 3_600_001 }, '"revocation.reloadIntervalMs"'],
    [{ load: () => [], reloadIntervalMs: '60s' }, '"revocation.reloadIntervalMs"'],
    [
      { callbacks: { clientIds: 'gateway', requireExp: 'no' } },
      '"revocation.callbacks.requireExp" must be a boolean',
    ],
    [{ callbacks: true }, '"revocation.callbacks" must be an object'],
    [{ callbacks: {} }, '"revocation.callbacks.clientIds" must be the client id'],
    [{ callbacks: { clientIds: [] } }, '"revocation.callbacks.clientIds"'],
    [{ callbacks: { clientIds: [''] } }, '"revocation.callbacks.clientIds"'],
    [{ callbacks: { clientIds: ['ok', 7] } }, '"revocation.callbacks.clientIds"'],
    [{ callbacks: { clientIds: 'x'.repeat(257) } }, '"revocation.callbacks.clientIds"'],
    [
      { callbacks: { clientIds: 'gateway', maxAgeSeconds: 0 } },
      '"revocation.callbacks.maxAgeSeconds"',
    ],
    [
      { callbacks: { clientIds: 'gateway', maxAgeSeconds: 3601 } },
      '"revocation.callbacks.maxAgeSeconds"',
    ],
    [
      { callbacks: { clientIds: 'gateway', audience: 'gateway' } },
      '"revocation.callbacks.audience" is not an option',
    ],
  ])('refuses %j with a TypeError naming the option', (value, message) => {
    expect(() =>
      normalizeOptions({
        issuers: ISSUERS,
        audience: 'gateway',
        revocation: value,
      } as unknown as GateOptions),
    ).toThrow(message)
  })

  it('never repeats the text of a refused value', () => {
    const secret = 'redis://:hunter2@cache:6379'
    expect(() => normalizeRevocationOptions({ store: secret }, 86_400)).toThrow(
      'got a string of length 27',
    )
    expect(() => normalizeRevocationOptions({ store: secret }, 86_400)).not.toThrow('hunter2')
  })
})
