/**
 * Options of certificate-bound tokens (RFC 8705 §3) at the resource server: their type, defaults
 * and validation, once, at construction, with the one option kit.
 *
 * @module
 */
import { BlockList, isIP } from 'node:net'

import { fail, oneOf, record } from '../validate.js'
import { warnOnce } from '../warnings.js'
import {
  type AddressRange,
  type Coverage,
  coverageOf,
  WIDE_IPV4,
  WIDE_IPV6,
} from './address-ranges.js'

/**
 * `allowed` (default when `mtls` is given): unbound tokens as before, and tokens bound to a
 * certificate (`cnf["x5t#S256"]`) only with that certificate. `required`: only certificate-bound
 * tokens. `off`: as a gate without `mtls`, a certificate-bound token is refused.
 */
export type MtlsMode = 'off' | 'allowed' | 'required'

/** Certificate-bound access tokens (RFC 8705 §3), with the client certificate of the request. */
export interface MtlsOptions {
  /** Default `'allowed'`. */
  readonly mode?: MtlsMode
  /**
   * Addresses (`127.0.0.1`, `::1`) and CIDR ranges (`10.0.4.0/24`, `fd00:0:0:4::/64`) of the
   * TLS-terminating proxies in front of this service. A request whose connection comes from one of
   * them is judged by the certificate in its RFC 9440 `Client-Cert` field (the proxy's own TLS
   * certificate, if any, is not the client's); from any other address that field is ignored and
   * only the certificate of the request's own TLS connection counts. Default: none (no field is
   * ever read). At most 256 entries.
   *
   * Refused at construction: entries that, alone or together, hold every IPv4 client (as IPv4 or
   * as IPv4-mapped IPv6: `0.0.0.0/0`, `::ffff:0.0.0.0/96`, `::/1`, `0.0.0.0/1` with
   * `128.0.0.0/1`) or every IPv6 client of the internet (`2000::/3`, `::/0`). Warned about once
   * (`TOLLGATE_WIDE_TRUSTED_PROXIES`): entries holding more IPv4 addresses than one `/8`, or more
   * IPv6 addresses than one `/32`, loopback not counted.
   */
  readonly trustedProxies?: readonly string[]
}

/** {@link MtlsOptions} validated; `undefined` in a gate when the mode is `off`. */
export interface NormalizedMtlsOptions {
  readonly mode: 'allowed' | 'required'
  /** The trusted proxies' addresses, `undefined` when none. */
  readonly trustedProxies: BlockList | undefined
}

const MTLS_KEYS = ['mode', 'trustedProxies']
const MAX_PROXIES = 256

/** Checks one `address` or `address/prefix` entry, or fails naming it. */
function parseProxy(entry: unknown, path: string): AddressRange {
  if (typeof entry !== 'string') fail(path, 'must be an IP address or a CIDR range', entry)
  const slash = entry.indexOf('/')
  const address = slash === -1 ? entry : entry.slice(0, slash)
  const family = isIP(address)
  if (family !== 4 && family !== 6) {
    fail(
      path,
      'must be an IP address or a CIDR range such as 10.0.0.0/8 (host names are not resolved)',
      entry,
      { show: true },
    )
  }
  const max = family === 4 ? 32 : 128
  if (slash === -1) return { address, family, prefix: max }
  const text = entry.slice(slash + 1)
  const prefix = Number(text)
  if (!/^\d{1,3}$/.test(text) || prefix > max) {
    fail(path, `must have a prefix length from 1 to ${max}`, entry, { show: true })
  }
  return { address, family, prefix }
}

/**
 * What a proxy list that trusts every client of a family is told: a `Client-Cert` field from any
 * of them would be believed (RFC 9440 §4: only a trusted proxy's field may be), which turns a
 * certificate-bound token back into a bearer token.
 */
function everyClient(coverage: Coverage, verb: 'trusts' | 'trust'): string | undefined {
  const family = coverage.everyIpv4Client ? 'IPv4' : coverage.everyIpv6Client ? 'IPv6' : undefined
  if (family === undefined) return undefined
  return `${verb} every ${family} client (any of them could send a Client-Cert field and have it believed); list only the addresses of the TLS-terminating proxies, such as 10.0.4.0/24 or fd00:0:0:4::/64`
}

/**
 * Refuses entries that trust every client of a family, alone or together; warns once when they
 * trust far more addresses than a tier of proxies has.
 */
function checkCoverage(ranges: readonly AddressRange[], entries: readonly string[], warn: boolean) {
  for (const [index, range] of ranges.entries()) {
    const problem = everyClient(coverageOf([range]), 'trusts')
    if (problem !== undefined) {
      fail(`mtls.trustedProxies[${index}]`, problem, entries[index], { show: true })
    }
  }
  const coverage = coverageOf(ranges)
  const problem = everyClient(coverage, 'trust')
  if (problem !== undefined) {
    fail('mtls.trustedProxies', `together ${problem}`, entries.join(', '), { show: true })
  }
  if (!warn || (coverage.ipv4Width <= WIDE_IPV4 && coverage.ipv6Width <= WIDE_IPV6)) return
  const wide =
    coverage.ipv4Width > WIDE_IPV4
      ? `${coverage.ipv4Width.toLocaleString('en')} IPv4 addresses, more than a /8`
      : `more IPv6 addresses than a /32`
  warnOnce({
    code: 'TOLLGATE_WIDE_TRUSTED_PROXIES',
    subject: entries.join(','),
    message: `mtls.trustedProxies trusts ${wide}: a client at any of them can send a Client-Cert field that is believed. List only the addresses of the TLS-terminating proxies (their subnet, such as 10.0.4.0/24).`,
  })
}

/** Validates `mtls`; `undefined` when it is absent or its mode is `off`. */
export function normalizeMtlsOptions(input: unknown): NormalizedMtlsOptions | undefined {
  if (input === undefined) return undefined
  const options = record(input, 'mtls', MTLS_KEYS) as MtlsOptions
  const mode = oneOf(options.mode, 'mtls.mode', ['allowed', 'required', 'off'] as const)
  const proxies = options.trustedProxies
  let trustedProxies: BlockList | undefined
  if (proxies !== undefined) {
    if (!Array.isArray(proxies) || proxies.length > MAX_PROXIES) {
      fail('mtls.trustedProxies', `must be an array of at most ${MAX_PROXIES} addresses`, proxies)
    }
    if (proxies.length > 0) {
      const ranges = proxies.map((entry, index) =>
        parseProxy(entry, `mtls.trustedProxies[${index}]`),
      )
      checkCoverage(ranges, proxies as string[], mode !== 'off')
      const list = new BlockList()
      for (const { address, family, prefix } of ranges) {
        const type = family === 4 ? 'ipv4' : 'ipv6'
        if (prefix === (family === 4 ? 32 : 128)) list.addAddress(address, type)
        else list.addSubnet(address, prefix, type)
      }
      trustedProxies = list
    }
  }
  // Validated whatever the mode, so that turning it on later cannot reveal a bad option.
  if (mode === 'off') return undefined
  return Object.freeze({ mode, trustedProxies })
}
