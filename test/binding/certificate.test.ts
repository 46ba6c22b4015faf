/**
 * The certificate step on its own, through `gate.check()` with the sockets a host hands over:
 * the RFC 8705 §3.1 thumbprint, which addresses are proxies (IPv4, IPv6, IPv4-mapped, ranges),
 * and what a `Client-Cert` field must be (RFC 9440 §2, RFC 8941 §3.3.5).
 */
import { createHash } from 'node:crypto'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { certificateThumbprint } from '../../src/binding/certificate.js'
import { clientCertOf } from '../../src/binding/client-cert.js'
import { createGate, type Gate } from '../../src/gate/gate.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import type { PeerSocket, RequestLike } from '../../src/types.js'
import { clientCertField, makeCertificate, type TestCertificate } from '../helpers/tls.js'

let issuer: TestIssuer
let alice: TestCertificate
let bob: TestCertificate
let gate: Gate
const reasons: string[] = []

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  alice = makeCertificate('alice')
  bob = makeCertificate('bob')
  gate = createGate({
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
    mtls: { trustedProxies: ['10.1.2.3', '192.168.0.0/16', 'fd00:0:0:4::/64'] },
    onEvent: (event) => {
      if (event.type === 'rejected') reasons.push(event.reason)
    },
  })
})
afterAll(async () => {
  await gate.close()
  await issuer.close()
})

/** What a Node TLS socket from `remoteAddress` that presented `certificate` looks like. */
function socketOf(remoteAddress: string, certificate?: TestCertificate): PeerSocket {
  return { remoteAddress, getPeerX509Certificate: () => certificate?.x509 }
}

async function reasonOf(request: RequestLike): Promise<string> {
  try {
    await gate.check(request)
    return 'admitted'
  } catch (error) {
    return (error as { reason: string }).reason
  }
}

describe('the thumbprint (RFC 8705 §3.1)', () => {
  it('is the base64url SHA-256 of the DER, the same bytes as X509Certificate.fingerprint256 in hex', () => {
    const thumbprint = certificateThumbprint(alice.x509)
    expect(thumbprint).toBe(createHash('sha256').update(alice.x509.raw).digest('base64url'))
    expect(thumbprint).toMatch(/^[A-Za-z0-9_-]{43}$/)
    const fromHex = Buffer.from(alice.x509.fingerprint256.replaceAll(':', ''), 'hex')
    expect(fromHex.toString('base64url')).toBe(thumbprint)
  })

  it('is what mint({ certificate }) puts in cnf, from PEM, DER or an X509Certificate', async () => {
    const thumbprint = certificateThumbprint(alice.x509)
    for (const certificate of [alice.cert, alice.x509.raw, alice.x509]) {
      const token = await issuer.mint({}, { certificate })
      const payload = JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString())
      expect(payload.cnf).toEqual({ 'x5t#S256': thumbprint })
    }
    await expect(issuer.mint({}, { certificate: 'not a certificate' })).rejects.toThrow(
      /"certificate" must be a certificate/,
    )
  })
})

describe('the confirmation claim', () => {
  it.each([
    ['empty', {}],
    ['an array', ['x']],
    ['a string', 'x5t'],
    ['a thumbprint of another length', { 'x5t#S256': 'A'.repeat(42) }],
    ['a SHA-1 thumbprint (x5t)', { x5t: 'A'.repeat(27) }],
    ['jkt on a gate without DPoP', { jkt: 'A'.repeat(43) }],
  ])('refuses a cnf that is %s (sender_constrained)', async (_what, cnf) => {
    const token = await issuer.mint({ cnf })
    const headers = { authorization: `Bearer ${token}` }
    expect(await reasonOf({ headers, socket: socketOf('127.0.0.1', alice) })).toBe(
      'sender_constrained',
    )
  })
})

describe('where the certificate comes from', () => {
  it('the TLS connection of a client that is not a listed proxy', async () => {
    const token = await issuer.mint({}, { certificate: alice.cert })
    const headers = { authorization: `Bearer ${token}` }
    expect(await reasonOf({ headers, socket: socketOf('127.0.0.1', alice) })).toBe('admitted')
    expect(await reasonOf({ headers, socket: socketOf('10.1.2.4', bob) })).toBe(
      'certificate_mismatch',
    )
    expect(await reasonOf({ headers, socket: socketOf('10.1.2.4') })).toBe('certificate_missing')
    // No socket at all (a Fetch host that was told nothing): no certificate.
    expect(await reasonOf({ headers })).toBe('certificate_missing')
  })

  it('the Client-Cert field of a listed proxy, by address, range, IPv6 and IPv4-mapped IPv6', async () => {
    const token = await issuer.mint({}, { certificate: alice.cert })
    const headers = { authorization: `Bearer ${token}`, 'client-cert': clientCertField(alice) }
    for (const address of [
      '10.1.2.3',
      '192.168.7.9',
      '::ffff:10.1.2.3',
      '::ffff:192.168.0.1',
      'fd00:0:0:4::12',
    ]) {
      expect(await reasonOf({ headers, socket: socketOf(address, bob) }), address).toBe('admitted')
    }
    for (const address of [
      '10.1.2.4',
      '::ffff:10.1.2.4',
      'fe80::1',
      '127.0.0.1',
      'not an address',
    ]) {
      expect(await reasonOf({ headers, socket: socketOf(address) }), address).toBe(
        'certificate_missing',
      )
    }
  })

  it('says in the detail that a Client-Cert field came from an address not listed', async () => {
    const token = await issuer.mint({}, { certificate: alice.cert })
    const error = await gate
      .check({
        headers: { authorization: `Bearer ${token}`, 'client-cert': clientCertField(alice) },
        socket: socketOf('172.16.0.9'),
      })
      .catch((caught: unknown) => caught)
    expect(error).toMatchObject({
      reason: 'certificate_missing',
      detail: { source: 'tls', ignoredClientCertFrom: '172.16.0.9' },
    })
  })

  it('reports the source in the refusal detail', async () => {
    const token = await issuer.mint({}, { certificate: alice.cert })
    const error = await gate
      .check({
        headers: { authorization: `Bearer ${token}`, 'client-cert': clientCertField(bob) },
        socket: socketOf('10.1.2.3'),
      })
      .catch((caught: unknown) => caught)
    expect(error).toMatchObject({
      status: 401,
      reason: 'certificate_mismatch',
      detail: { source: 'client-cert' },
    })
  })
})

describe('the Client-Cert field (RFC 9440 §2)', () => {
  const base64 = () => alice.x509.raw.toString('base64')
  const read = (value: string, rawHeaders?: string[]) => {
    const result = clientCertOf({ headers: { 'client-cert': value }, rawHeaders })
    if (result === undefined) return 'none'
    return 'problem' in result ? result.problem : certificateThumbprint(result)
  }

  it('is one byte sequence, padded or not, with spaces around and parameters ignored', () => {
    const thumbprint = certificateThumbprint(alice.x509)
    expect(read(`:${base64()}:`)).toBe(thumbprint)
    expect(read(`  :${base64()}:  `)).toBe(thumbprint)
    expect(read(`:${base64().replace(/=+$/, '')}:`)).toBe(thumbprint)
    expect(read(`:${base64()}:;a=1;b="x";c;d=tok/en;e=?0`)).toBe(thumbprint)
  })

  it('refuses anything else, naming the problem', () => {
    expect(read(`:${base64()}:, :${base64()}:`)).toBe('repeated')
    expect(read(`:${base64()}:`, ['client-cert', 'x', 'Client-Cert', 'y'])).toBe('repeated')
    expect(read(alice.cert)).toBe('not_a_byte_sequence')
    expect(read(encodeURIComponent(alice.cert))).toBe('not_a_byte_sequence')
    expect(read(`:${alice.x509.raw.toString('base64url')}:`)).toBe('not_a_byte_sequence')
    expect(read(`:${base64()}`)).toBe('not_a_byte_sequence')
    expect(read(`:${base64()}:;A=1`)).toBe('not_a_byte_sequence')
    expect(read(':QUJDRA=:')).toBe('not_a_certificate')
    expect(read('::')).toBe('not_a_certificate')
    expect(read(`:${'A'.repeat(16_400)}:`)).toBe('too_large')
  })

  it('is absent when there is no field', () => {
    expect(clientCertOf({ headers: {} })).toBeUndefined()
  })
})

describe('a proxy certificate that reads', () => {
  it('is the DER the proxy forwarded, one DER SEQUENCE with nothing after it', () => {
    const parsed = clientCertOf({ headers: { 'client-cert': clientCertField(alice) } })
    expect(Buffer.isBuffer(parsed) && parsed.equals(alice.x509.raw)).toBe(true)
    const trailing = Buffer.concat([alice.x509.raw, Buffer.from([0])]).toString('base64')
    expect(clientCertOf({ headers: { 'client-cert': `:${trailing}:` } })).toEqual({
      problem: 'not_a_certificate',
    })
    const truncated = alice.x509.raw.subarray(0, 100).toString('base64')
    expect(clientCertOf({ headers: { 'client-cert': `:${truncated}:` } })).toEqual({
      problem: 'not_a_certificate',
    })
    // A short DER length form too: a SEQUENCE of three bytes.
    expect(clientCertOf({ headers: { 'client-cert': ':MAMCAQE=:' } })).toEqual(
      Buffer.from('300302 0101'.replace(' ', ''), 'hex'),
    )
  })
})

describe('the certificate of a kept-alive connection', () => {
  /** A socket that counts how often its certificate is read, and can change it (renegotiation). */
  function countingSocket(protocol: string, certificate: TestCertificate) {
    const socket = {
      reads: 0,
      certificate,
      remoteAddress: '127.0.0.1',
      getProtocol: () => protocol,
      getPeerX509Certificate() {
        socket.reads++
        return socket.certificate.x509
      },
    }
    return socket
  }

  it('is read once per TLS 1.3 connection, which cannot renegotiate', async () => {
    const token = await issuer.mint({}, { certificate: alice.cert })
    const socket = countingSocket('TLSv1.3', alice)
    for (let i = 0; i < 3; i++) {
      expect(await reasonOf({ headers: { authorization: `Bearer ${token}` }, socket })).toBe(
        'admitted',
      )
    }
    expect(socket.reads).toBe(1)
  })

  it('is read on every request of a TLS 1.2 connection: a renegotiated certificate counts', async () => {
    const token = await issuer.mint({}, { certificate: alice.cert })
    const socket = countingSocket('TLSv1.2', alice)
    const headers = { authorization: `Bearer ${token}` }
    expect(await reasonOf({ headers, socket })).toBe('admitted')
    socket.certificate = bob
    expect(await reasonOf({ headers, socket })).toBe('certificate_mismatch')
    expect(socket.reads).toBe(2)
  })
})
