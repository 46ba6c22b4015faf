/**
 * Options of certificate-bound tokens (RFC 8705 §3) at the resource server: their type, defaults
 * and validation, once, at construction, with the one option kit.
 *
 * @module
 */
import { BlockList, isIP } from 'node:net'

import { fail, oneOf, record } from '../validate.js'

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
   * Addresses (`127.0.0.1`, `::1`) and CIDR ranges (`10.0.0.0/8`, `fd00::/8`) of the
   * TLS-terminating proxies in front of this service. A request whose connection comes from one of
   * them is judged by the certificate in its RFC 9440 `Client-Cert` field (the proxy's own TLS
   * certificate, if any, is not the client's); from any other address that field is ignored and
   * only the certificate of the request's own TLS connection counts. Default: none (no field is
   * ever read). At most 256 entries; a range that covers every address is refused.
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

/** Adds one `address` or `address/prefix` to `list`, or fails naming the entry. */
function addProxy(list: BlockList, entry: unknown, path: string): void {
  if (typeof entry !== 'string') fail(path, 'must be an IP address or a CIDR range', entry)
  const slash = entry.indexOf('/')
  const address = slash === -1 ? entry : entry.slice(0, slash)
  const family = isIP(address)
  if (family === 0) {
    fail(
      path,
      'must be an IP address or a CIDR range such as 10.0.0.0/8 (host names are not resolved)',
      entry,
      { show: true },
    )
  }
  const type = family === 4 ? 'ipv4' : 'ipv6'
  if (slash === -1) {
    list.addAddress(address, type)
    return
  }
  const text = entry.slice(slash + 1)
  const prefix = Number(text)
  const max = family === 4 ? 32 : 128
  if (!/^\d{1,3}$/.test(text) || prefix > max) {
    fail(path, `must have a prefix length from 1 to ${max}`, entry, { show: true })
  }
  if (prefix === 0) {
    fail(
      path,
      'trusts every address: anyone could send a Client-Cert field; list the proxies only',
      entry,
      { show: true },
    )
  }
  list.addSubnet(address, prefix, type)
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
      const list = new BlockList()
      for (const [index, entry] of proxies.entries()) {
        addProxy(list, entry, `mtls.trustedProxies[${index}]`)
      }
      trustedProxies = list
    }
  }
  // Validated whatever the mode, so that turning it on later cannot reveal a bad option.
  if (mode === 'off') return undefined
  return Object.freeze({ mode, trustedProxies })
}
