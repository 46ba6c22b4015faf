/**
 * Real TLS on loopback for certificate-bound tokens (RFC 8705): certificates made by the `openssl`
 * CLI (self-signed EC P-256, one day), an HTTPS server that asks for a client certificate and
 * accepts any (as RFC 8705 §2.2 self-signed binding needs), and a client that presents one.
 */
import { execFileSync } from 'node:child_process'
import { X509Certificate } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import type { IncomingHttpHeaders, RequestListener, Server } from 'node:http'
import { request as httpRequest } from 'node:http'
import { type Agent, createServer as createHttpsServer, request as httpsRequest } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A certificate and its private key, PEM, with the parsed certificate. */
export interface TestCertificate {
  readonly cert: string
  readonly key: string
  readonly x509: X509Certificate
}

/** A self-signed EC certificate for `commonName`; `ip` adds an IP subjectAltName (servers). */
export function makeCertificate(commonName: string, ip?: string): TestCertificate {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-tls-'))
  try {
    const keyPath = join(dir, 'key.pem')
    const certPath = join(dir, 'cert.pem')
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        `/CN=${commonName}`,
        ...(ip === undefined ? [] : ['-addext', `subjectAltName=IP:${ip}`]),
        '-keyout',
        keyPath,
        '-out',
        certPath,
      ],
      { stdio: 'ignore' },
    )
    const cert = readFileSync(certPath, 'utf8')
    return { cert, key: readFileSync(keyPath, 'utf8'), x509: new X509Certificate(cert) }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The RFC 9440 `Client-Cert` value of a certificate: `:base64(DER):`. */
export function clientCertField(certificate: TestCertificate | X509Certificate): string {
  const x509 = certificate instanceof X509Certificate ? certificate : certificate.x509
  return `:${x509.raw.toString('base64')}:`
}

/**
 * An HTTPS server that serves what `plain` (an app factory's `node:http` server) serves: its
 * request listeners, moved over. Asks every client for a certificate and accepts any.
 */
export function httpsServerOf(plain: Server, server: TestCertificate): Server {
  const tls = createHttpsServer({
    cert: server.cert,
    key: server.key,
    requestCert: true,
    rejectUnauthorized: false,
  })
  for (const listener of plain.listeners('request')) tls.on('request', listener as RequestListener)
  return tls
}

/** Listens on 127.0.0.1 (or `host`) on a free port; resolves to the port. */
export function listen(server: Server, host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, host, () => resolve((server.address() as AddressInfo).port))
  })
}

export function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.closeAllConnections?.()
    server.close(() => resolve())
  })
}

export interface Answer {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

/**
 * One request on a new connection: over TLS (trusting `ca`, presenting `client` when given) or,
 * without `ca`, plain HTTP. `headers` may repeat a field: `[name, value]` pairs, each sent as a field.
 */
export function send(options: {
  readonly port: number
  readonly path: string
  readonly headers: Record<string, string> | ReadonlyArray<readonly [string, string]>
  readonly ca?: TestCertificate | undefined
  readonly client?: TestCertificate | undefined
  readonly host?: string | undefined
  /** An HTTPS agent (kept-alive connections); default a new connection per request. */
  readonly agent?: Agent | undefined
}): Promise<Answer> {
  const { port, path, ca, client, host = '127.0.0.1', agent } = options
  // A name given twice is sent as two fields (Node writes each value of an array on its own line).
  const headers: Record<string, string | string[]> = {}
  const pairs = Array.isArray(options.headers)
    ? (options.headers as ReadonlyArray<readonly [string, string]>)
    : Object.entries(options.headers)
  for (const [name, value] of pairs) {
    const held = headers[name]
    headers[name] = held === undefined ? value : [...(Array.isArray(held) ? held : [held]), value]
  }
  return new Promise((resolve, reject) => {
    const common = { host, port, path, method: 'GET', headers }
    const request =
      ca === undefined
        ? httpRequest({ ...common, agent: false })
        : httpsRequest({
            ...common,
            agent: agent ?? false,
            ca: ca.cert,
            ...(client === undefined ? {} : { cert: client.cert, key: client.key }),
          })
    request.on('response', (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      )
    })
    request.on('error', reject)
    request.end()
  })
}

/**
 * A TLS-terminating proxy as RFC 9440 describes one: asks for a client certificate, drops any
 * `Client-Cert` its client sent, forwards the certificate it received in its own `Client-Cert`
 * field, and relays the request to `target` on loopback over plain HTTP.
 */
export function clientCertProxy(
  target: { readonly port: number; readonly host?: string },
  server: TestCertificate,
): Server {
  return createHttpsServer(
    { cert: server.cert, key: server.key, requestCert: true, rejectUnauthorized: false },
    (req, res) => {
      const headers = { ...req.headers }
      delete headers['client-cert']
      const peer = (req.socket as import('node:tls').TLSSocket).getPeerX509Certificate()
      if (peer !== undefined) headers['client-cert'] = clientCertField(peer)
      const upstream = httpRequest(
        {
          host: target.host ?? '127.0.0.1',
          port: target.port,
          path: req.url,
          method: req.method,
          headers,
          agent: false,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(res)
        },
      )
      upstream.on('error', () => {
        res.statusCode = 502
        res.end()
      })
      req.pipe(upstream)
    },
  )
}
