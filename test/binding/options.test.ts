/** `mtls` options: validated once, at construction, with messages that say what to change. */
import { describe, expect, it } from 'vitest'

import { normalizeMtlsOptions } from '../../src/binding/options.js'
import { createGate } from '../../src/gate/gate.js'

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
      { trustedProxies: ['0.0.0.0/0'] },
      `"mtls.trustedProxies[0]" trusts every address: anyone could send a Client-Cert field; list the proxies only (got '0.0.0.0/0')`,
    ],
    [{ trustedProxies: ['::/0'] }, '"mtls.trustedProxies[0]" trusts every address'],
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
      trustedProxies: ['127.0.0.1', '::1', '10.0.0.0/8', 'fd00::/8'],
    })
    const list = options?.trustedProxies
    expect(list?.check('10.20.30.40', 'ipv4')).toBe(true)
    expect(list?.check('11.0.0.1', 'ipv4')).toBe(false)
    expect(list?.check('::1', 'ipv6')).toBe(true)
  })
})
