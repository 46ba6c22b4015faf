/** `mtls` options: validated once, at construction, with messages that say what to change. */
import { afterEach, describe, expect, it } from 'vitest'

import { type AddressRange, coverageOf } from '../../src/binding/address-ranges.js'
import { normalizeMtlsOptions } from '../../src/binding/options.js'
import { createGate } from '../../src/gate/gate.js'
import { resetWarningsForTests } from '../../src/warnings.js'

const ISSUERS = [
  { issuer: 'https://sso.example.com/realms/acme', jwksUri: 'https://sso.example.com/jwks' },
]

describe('mtls options', () => {
  it('default to mode allowed with no proxy; off is no step at all', () => {
    expect(normalizeMtlsOptions({})).toEqual({ mode: 'allowed', trustedProxies: undefined })
    expect(normalizeMtlsOptions({ mode: 'required' })?.mode).toBe('required')
    expect(normalizeMtlsOptions({ mode: 'off' })).toBeUndefined()
    expect(normalizeMtlsOptions(undefined)).toBeUndefined()
  })

  it.each([
    [{ mode: 'on' }, `"mtls.mode" must be one of 'allowed', 'required', 'off' (got 'on')`],
    [
      { trustedProxy: [] },
      '"mtls.trustedProxy" is not an option; use one of: mode, trustedProxies',
    ],
    [
      { trustedProxies: '127.0.0.1' },
      '"mtls.trustedProxies" must be an array of at most 256 addresses',
    ],
    [
      { trustedProxies: ['proxy.internal'] },
      `"mtls.trustedProxies[0]" must be an IP address or a CIDR range such as 10.0.0.0/8 (host names are not resolved) (got 'proxy.internal')`,
    ],
    [
      { trustedProxies: ['127.0.0.1', '10.0.0.0/33'] },
      `"mtls.trustedProxies[1]" must have a prefix length from 1 to 32 (got '10.0.0.0/33')`,
    ],
    [
      { trustedProxies: [42] },
      '"mtls.trustedProxies[0]" must be an IP address or a CIDR range (got number 42)',
    ],
    // Checked whatever the mode, so that turning it on later cannot reveal a bad option.
    [{ mode: 'off', trustedProxies: ['nope'] }, '"mtls.trustedProxies[0]" must be an IP address'],
  ])('refuses %j', (mtls, message) => {
    expect(() => createGate({ issuers: ISSUERS, audience: 'api', mtls } as never)).toThrow(
      `createGate(options): ${message}`,
    )
  })

  it('accepts addresses and ranges of both families', () => {
    const options = normalizeMtlsOptions({
      trustedProxies: ['127.0.0.1', '::1', '10.0.0.0/8', 'fd00::/32'],
    })
    const list = options?.trustedProxies
    expect(list?.check('10.20.30.40', 'ipv4')).toBe(true)
    expect(list?.check('11.0.0.1', 'ipv4')).toBe(false)
    expect(list?.check('::1', 'ipv6')).toBe(true)
  })
})

/**
 * RFC 9440 §4: a `Client-Cert` field may be believed only from a trusted proxy. Ranges that hold
 * every client of a family make every client a "proxy": a field any of them writes is believed,
 * and a certificate-bound token is a bearer token again. An IPv4 client arrives as `10.0.0.5` or
 * `::ffff:10.0.0.5` and either form matches IPv4 and IPv4-mapped IPv6 entries alike.
 */
describe('trusted proxies that would trust every client', () => {
  const EVERY_IPV4 =
    'trusts every IPv4 client (any of them could send a Client-Cert field and have it believed); list only the addresses of the TLS-terminating proxies, such as 10.0.4.0/24 or fd00:0:0:4::/64'
  const EVERY_IPV6 = EVERY_IPV4.replace('IPv4', 'IPv6')
  const build = (trustedProxies: string[], mode?: string) => () =>
    createGate({ issuers: ISSUERS, audience: 'api', mtls: { mode, trustedProxies } } as never)

  it.each([
    ['0.0.0.0/0', EVERY_IPV4],
    ['::/0', EVERY_IPV4],
    // IPv4-mapped forms: every IPv4 client as a dual-stack socket reports it.
    ['::ffff:0.0.0.0/96', EVERY_IPV4],
    ['::ffff:0:0/96', EVERY_IPV4],
    ['::fffe:0:0/95', EVERY_IPV4],
    // Half of the IPv6 space, which holds the IPv4-mapped addresses.
    ['::/1', EVERY_IPV4],
    ['::/8', EVERY_IPV4],
    // Every IPv6 address the internet routes to clients.
    ['2000::/3', EVERY_IPV6],
    ['8000::/0', EVERY_IPV4],
  ])('refuses %s alone, naming the entry and what to list instead', (entry, problem) => {
    expect(build(['127.0.0.1', entry])).toThrow(
      `createGate(options): "mtls.trustedProxies[1]" ${problem} (got '${entry}')`,
    )
  })

  it.each([
    [['0.0.0.0/1', '128.0.0.0/1'], EVERY_IPV4],
    [['::ffff:0.0.0.0/97', '128.0.0.0/1'], EVERY_IPV4],
    [['0.0.0.0/1', '::ffff:128.0.0.0/97'], EVERY_IPV4],
    // Every address a client connects from, multicast and the reserved 240.0.0.0/4 left out.
    [['0.0.0.0/1', '128.0.0.0/2', '192.0.0.0/3'], EVERY_IPV4],
    [['2000::/4', '3000::/4'], EVERY_IPV6],
    [['::1', '2000::/4', '3000::/5', '3800::/5'], EVERY_IPV6],
  ])('refuses %j, ranges that together trust every client of a family', (entries, problem) => {
    expect(build(entries)).toThrow(
      `createGate(options): "mtls.trustedProxies" together ${problem.replace('trusts', 'trust')} (got '${entries.join(', ')}')`,
    )
  })

  it('refuses them whatever the mode, so that turning mtls on later cannot trust everyone', () => {
    expect(build(['0.0.0.0/1', '128.0.0.0/1'], 'off')).toThrow('"mtls.trustedProxies" together')
  })
})

describe('trusted proxies wider than a tier of proxies', () => {
  afterEach(() => resetWarningsForTests())

  /** The TollgateWarnings emitted while `run` builds gates. */
  async function warningsOf(run: () => void): Promise<(Error & { code?: string })[]> {
    const warnings: (Error & { code?: string })[] = []
    const listener = (warning: Error & { code?: string }) => warnings.push(warning)
    process.on('warning', listener)
    try {
      run()
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      process.off('warning', listener)
    }
    return warnings.filter((warning) => warning.name === 'TollgateWarning')
  }
  const gateWith = (trustedProxies: string[], mode?: string) =>
    createGate({ issuers: ISSUERS, audience: 'api', mtls: { mode, trustedProxies } } as never)

  it.each([
    [['128.0.0.0/2'], '1,073,741,824 IPv4 addresses, more than a /8'],
    // Loopback is not counted: 128.0.0.0 less the 16,777,216 addresses of 127.0.0.0/8.
    [['0.0.0.0/1'], '2,130,706,432 IPv4 addresses, more than a /8'],
    // The usual "all private networks": 10/8, 172.16/12 and 192.168/16 together.
    [
      ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'],
      '17,891,328 IPv4 addresses, more than a /8',
    ],
    [['10.0.0.0/7'], '33,554,432 IPv4 addresses, more than a /8'],
    // Two /8s: the width is of all the entries together.
    [['10.0.0.0/8', '11.0.0.0/8'], '33,554,432 IPv4 addresses, more than a /8'],
    [['::ffff:10.0.0.0/103'], '33,554,432 IPv4 addresses, more than a /8'],
    [['fd00::/8'], 'more IPv6 addresses than a /32'],
    [['2001:db8::/31'], 'more IPv6 addresses than a /32'],
  ])('warns once (TOLLGATE_WIDE_TRUSTED_PROXIES) for %j', async (entries, width) => {
    const warnings = await warningsOf(() => {
      gateWith(entries)
      gateWith(entries)
    })
    expect(warnings.map(({ code }) => code)).toEqual(['TOLLGATE_WIDE_TRUSTED_PROXIES'])
    expect(warnings[0]?.message).toBe(
      `mtls.trustedProxies trusts ${width}: a client at any of them can send a Client-Cert field that is believed. List only the addresses of the TLS-terminating proxies (their subnet, such as 10.0.4.0/24).`,
    )
  })

  it.each([
    [['10.0.0.0/8']],
    // Loopback is not counted: no remote client connects from it.
    [['127.0.0.0/8', '10.0.0.0/8', '::1']],
    [['10.0.4.0/24', '192.168.0.0/16', 'fd00:0:0:4::/64', '2001:db8::/33']],
    [['2001:db8::/32']],
    [['::ffff:10.0.0.0/104']],
  ])('does not warn for %j, a tier of proxies', async (entries) => {
    expect(await warningsOf(() => gateWith(entries))).toEqual([])
  })

  it('does not warn while mtls is off', async () => {
    expect(await warningsOf(() => gateWith(['0.0.0.0/1'], 'off'))).toEqual([])
  })
})

describe('the width of trusted proxies, in every notation', () => {
  const range = (address: string, family: 4 | 6, prefix = family === 4 ? 32 : 128) => ({
    address,
    family,
    prefix,
  })

  it.each([
    // An IPv4-mapped address is an IPv4 client, in either spelling.
    [[range('::ffff:10.0.0.5', 6)], 1n, 0n],
    [[range('::ffff:a00:5', 6)], 1n, 0n],
    [[range('10.0.0.5', 4), range('::ffff:10.0.0.5', 6)], 1n, 0n],
    // An IPv4 tail elsewhere, a zone, all eight groups, a leading `::`.
    [[range('64:ff9b::10.0.0.5', 6)], 0n, 1n],
    [[range('fe80::1%eth0', 6)], 0n, 1n],
    [[range('2001:db8:1:2:3:4:5:6', 6, 112)], 0n, 65536n],
    // :: and ::1, loopback not counted.
    [[range('::', 6, 127)], 0n, 1n],
    // Host bits set in a range are ignored, as BlockList ignores them.
    [[range('10.1.2.3', 4, 24)], 256n, 0n],
    // Overlapping and touching entries are counted once.
    [[range('10.0.0.0', 4, 24), range('10.0.0.128', 4, 25), range('10.0.1.0', 4, 24)], 512n, 0n],
  ])('%j holds %s IPv4 and %s IPv6 client addresses', (ranges, ipv4, ipv6) => {
    const coverage = coverageOf(ranges as AddressRange[])
    expect([coverage.ipv4Width, coverage.ipv6Width]).toEqual([ipv4, ipv6])
    expect(coverage.everyIpv4Client || coverage.everyIpv6Client).toBe(false)
  })
})
