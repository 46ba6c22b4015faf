/**
 * Certificate-bound access tokens at the resource server (RFC 8705 §3): a token whose
 * `cnf["x5t#S256"]` names a certificate is admitted only when the request's client certificate has
 * that SHA-256 thumbprint (base64url of the SHA-256 of its DER, RFC 8705 §3.1). The certificate is
 * the one of the request's own TLS connection, or, when the connection comes from a trusted proxy,
 * the one in its RFC 9440 `Client-Cert` field (and then only that one). Runs on every request: a
 * cached verdict about the token never stands in for the certificate, which is the connection's.
 *
 * What binds is possession of the certificate's private key, which the TLS handshake proves; the
 * certificate's chain need not be checked here (RFC 8705 §2.2 lets self-signed certificates bind
 * tokens), and checking it, when wanted, is the TLS server's or the proxy's job.
 *
 * @module
 */
import { hash, timingSafeEqual, type X509Certificate } from 'node:crypto'
import { isIP } from 'node:net'

import { InvalidTokenError } from '../errors.js'
import type { VerifiedToken } from '../token/verify.js'
import type { PeerSocket, RequestLike } from '../types.js'
import { clientCertOf } from './client-cert.js'
import type { NormalizedMtlsOptions } from './options.js'

/** The certificate-binding step of one gate. */
export interface CertificateStep {
  /**
   * Checks the token's certificate binding against the request's client certificate.
   *
   * @throws InvalidTokenError: `certificate_required` (an unbound token, mode `required`),
   * `certificate_missing` (no client certificate), `certificate_mismatch` (another certificate),
   * `certificate_header` (a trusted proxy's `Client-Cert` field that is not one certificate), or
   * `sender_constrained` (a confirmation this gate cannot check).
   */
  confirm(request: RequestLike, verified: VerifiedToken): void
}

const X5T = 'x5t#S256'
const THUMBPRINT = /^[A-Za-z0-9_-]{43}$/

/** RFC 8705 §3.1: base64url of the SHA-256 of the certificate's DER (not `fingerprint256`, hex). */
export function certificateThumbprint(certificate: X509Certificate | Uint8Array): string {
  return hash('sha256', 'raw' in certificate ? certificate.raw : certificate, 'base64url')
}

/**
 * The thumbprint of each TLS 1.3 connection's client certificate, once known: TLS 1.3 has no
 * renegotiation, so a connection's certificate never changes, and the requests of a kept-alive
 * connection skip reading it (about 10 µs: Node builds an `X509Certificate` per call). A TLS 1.2
 * connection can renegotiate to another certificate: its certificate is read on every request.
 */
const CONNECTION_THUMBPRINTS = new WeakMap<PeerSocket, string>()

function connectionThumbprint(socket: PeerSocket | undefined): string | undefined {
  if (socket === undefined) return undefined
  const known = CONNECTION_THUMBPRINTS.get(socket)
  if (known !== undefined) return known
  const certificate = socket.getPeerX509Certificate?.()
  if (certificate === undefined) return undefined
  const thumbprint = certificateThumbprint(certificate)
  if (socket.getProtocol?.() === 'TLSv1.3') CONNECTION_THUMBPRINTS.set(socket, thumbprint)
  return thumbprint
}

/**
 * The token's `cnf["x5t#S256"]`, `undefined` when it has none. A confirmation with members this
 * gate does not check (`jkt` without DPoP on, anything unknown) refuses the token.
 */
function boundThumbprintOf(verified: VerifiedToken, dpop: boolean): string | undefined {
  const cnf = verified.claims.cnf
  if (cnf === undefined) return undefined
  // An empty `cnf` binds to nothing anyone could check: refused, as without `mtls`.
  if (typeof cnf !== 'object' || cnf === null || Array.isArray(cnf) || isEmpty(cnf)) {
    throw new InvalidTokenError({ reason: 'sender_constrained' })
  }
  let thumbprint: string | undefined
  for (const [member, value] of Object.entries(cnf)) {
    if (member === X5T && typeof value === 'string' && THUMBPRINT.test(value)) {
      thumbprint = value
    } else if (!(member === 'jkt' && dpop)) {
      throw new InvalidTokenError({ reason: 'sender_constrained' })
    }
  }
  return thumbprint
}

function isEmpty(record: object): boolean {
  for (const _ in record) return false
  return true
}

/** Creates the certificate step of a gate whose `mtls` mode is `allowed` or `required`. */
export function createCertificateStep(
  options: NormalizedMtlsOptions,
  context: { readonly dpop: boolean },
): CertificateStep {
  const { mode, trustedProxies } = options
  const { dpop } = context

  function fromTrustedProxy(request: RequestLike): boolean {
    if (trustedProxies === undefined) return false
    const address = request.socket?.remoteAddress
    if (address === undefined) return false
    const family = isIP(address)
    return family !== 0 && trustedProxies.check(address, family === 4 ? 'ipv4' : 'ipv6')
  }

  /**
   * Where the certificate was looked for and, for operators who expected a proxy's field, that a
   * `Client-Cert` field came from an address not in `trustedProxies` (and was ignored).
   */
  function refusalDetail(request: RequestLike, proxied: boolean): Record<string, unknown> {
    if (proxied) return { source: 'client-cert' }
    if (request.headers['client-cert'] === undefined) return { source: 'tls' }
    return { source: 'tls', ignoredClientCertFrom: request.socket?.remoteAddress }
  }

  /** The thumbprint of the request's client certificate, from its proxy's field or its own TLS. */
  function presented(request: RequestLike, proxied: boolean): string | undefined {
    if (proxied) {
      const certificate = clientCertOf(request)
      if (certificate === undefined) return undefined
      if (!('problem' in certificate)) return certificateThumbprint(certificate)
      throw new InvalidTokenError({
        reason: 'certificate_header',
        detail: { source: 'client-cert', problem: certificate.problem },
      })
    }
    // Anyone else's `Client-Cert` is the client's own text: ignored.
    return connectionThumbprint(request.socket)
  }

  return {
    confirm(request, verified) {
      const expected = boundThumbprintOf(verified, dpop)
      if (expected === undefined) {
        if (mode === 'required') throw new InvalidTokenError({ reason: 'certificate_required' })
        return
      }
      const proxied = fromTrustedProxy(request)
      const actual = presented(request, proxied)
      if (actual !== undefined && timingSafeEqual(Buffer.from(actual), Buffer.from(expected))) {
        return
      }
      throw new InvalidTokenError({
        reason: actual === undefined ? 'certificate_missing' : 'certificate_mismatch',
        detail: refusalDetail(request, proxied),
      })
    },
  }
}
