/**
 * docs/mtls.md's proxies, run as printed: its `openssl` lines make the CA, the proxy's and the
 * client's certificates; Debian's nginx (with njs) and HAProxy run its settings, given only this
 * machine's paths and free loopback ports; behind them, a service with the gate listens on
 * loopback and trusts `127.0.0.1`, as the guide's sample does. What RFC 9440 §4 and RFC 8705 §7.4
 * leave to the deployment is proved here: the proxy replaces what the client wrote, so a token
 * bound to a certificate is admitted only over a TLS connection with that certificate.
 */
import { execFileSync } from 'node:child_process'
import { X509Certificate } from 'node:crypto'
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

import express from 'express'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import { tollgate } from '../../adapters/express/index.js'
import { certificateThumbprint } from '../../src/binding/certificate.js'
import type { Gate } from '../../src/gate/gate.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import {
  blocksUnder,
  type ProxyProcess,
  replaceOnce,
  runShell,
  startProxy,
  withFreePort,
} from '../helpers/proxies.js'
import { freePort } from '../helpers/redis.js'
import {
  type Answer,
  close,
  listen,
  makeCertificate,
  send,
  type TestCertificate,
} from '../helpers/tls.js'

const GUIDE = 'docs/mtls.md'
const ROUTE = '/api/v1/billing/subscriptions'
const NJS_MODULE = '/usr/lib/nginx/modules/ngx_http_js_module.so'

let dir: string
let certs: string
/** The guide's certificates: the CA, its client certificate, the self-signed one. */
let ca: TestCertificate
let client: TestCertificate
let selfSigned: TestCertificate
/** A certificate the token is not bound to. */
let mallory: TestCertificate
let issuer: TestIssuer
let gate: Gate
let service: Server
let servicePort: number
/** The reasons of the gate's refusals, and the fields the service received, per request. */
const refusals: string[] = []
const received: Array<{ clientCert?: string; chain?: string }> = []

function fromFiles(name: string): TestCertificate {
  const cert = readFileSync(join(certs, `${name}.crt`), 'utf8')
  return {
    cert,
    key: readFileSync(join(certs, `${name}.key`), 'utf8'),
    x509: new X509Certificate(cert),
  }
}

/** Fails with what to install when a proxy the guide documents is not on this machine. */
function requireProxies(): void {
  const missing = ['nginx', 'haproxy', 'openssl', 'bash'].filter((command) => {
    try {
      execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' })
      return false
    } catch {
      return true
    }
  })
  if (!existsSync(NJS_MODULE)) missing.push('libnginx-mod-http-js')
  if (missing.length > 0) {
    throw new Error(`missing ${missing.join(', ')}: run scripts/test-system.sh (apt-get install)`)
  }
}

beforeAll(async () => {
  requireProxies()
  dir = mkdtempSync(join(tmpdir(), 'tollgate-proxies-'))
  // nginx's workers run as another user when the tests run as root: they must reach the files.
  chmodSync(dir, 0o755)
  certs = join(dir, 'certs')
  mkdirSync(certs)
  const [lines, selfSignedLine] = blocksUnder(GUIDE, 'A local CA and client certificates', 'sh', 2)
  const printed = await runShell(lines?.code ?? '', certs)
  await runShell(selfSignedLine?.code ?? '', certs)
  ca = fromFiles('ca')
  client = fromFiles('client')
  selfSigned = fromFiles('self-signed')
  mallory = makeCertificate('mallory')
  // The guide's last line prints the thumbprint RFC 8705 §3.1 defines.
  expect(printed.trim().split('\n').at(-1)).toBe(certificateThumbprint(client.x509))
  expect(client.x509.checkIssued(ca.x509)).toBe(true)

  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  const auth = tollgate({
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
    mtls: { mode: 'required', trustedProxies: ['127.0.0.1'] },
    onEvent: (event) => {
      if (event.type === 'rejected') refusals.push(event.reason)
    },
  })
  gate = auth.gate
  const app = express()
  app.use((req, _res, next) => {
    received.push({
      ...(req.headers['client-cert'] === undefined
        ? {}
        : { clientCert: String(req.headers['client-cert']) }),
      ...(req.headers['client-cert-chain'] === undefined
        ? {}
        : { chain: String(req.headers['client-cert-chain']) }),
    })
    next()
  })
  app.use(auth)
  app.get(ROUTE, (req, res) => {
    res.json({ user: req.auth?.subject })
  })
  // Loopback only, as the guide's sample: nobody but the proxies reaches it.
  service = createServer(app)
  servicePort = await listen(service, '127.0.0.1')
}, 60_000)

afterAll(async () => {
  if (service !== undefined) await close(service)
  await gate?.close()
  await issuer?.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

beforeEach(() => {
  refusals.length = 0
  received.length = 0
})

/** The guide's blocks with `/etc/<name>/` moved under the test's directory. */
function relocate(code: string, name: string): string {
  return code.replaceAll(`/etc/${name}/`, `${join(dir, name)}/`)
}

/** Copies the guide's certificates where its settings say (`/etc/<name>/tls/`). */
function installCertificates(name: string, files: readonly string[]): void {
  const tls = join(dir, name, 'tls')
  mkdirSync(tls, { recursive: true })
  for (const file of files) copyFileSync(join(certs, file), join(tls, file))
}

/** nginx as the guide's "nginx" section sets it up; `edit` changes the `http` block first. */
async function startNginx(edit: (http: string) => string = (http) => http): Promise<ProxyProcess> {
  const [main, http] = blocksUnder(GUIDE, 'nginx', 'nginx', 2)
  const [njs] = blocksUnder(GUIDE, 'nginx', 'js')
  const njsPath = relocate(/^\/\/ (\S+)\n/.exec(njs?.code ?? '')?.[1] ?? '', 'nginx')
  mkdirSync(dirname(njsPath), { recursive: true })
  writeFileSync(njsPath, njs?.code ?? '')
  installCertificates('nginx', ['api.crt', 'api.key', 'ca.crt'])
  return withFreePort(freePort, async (port) => {
    const server = replaceOnce(relocate(edit(http?.code ?? ''), 'nginx'), [
      ['listen 443 ssl;', `listen 127.0.0.1:${port} ssl;`],
      ['proxy_pass http://127.0.0.1:3000;', `proxy_pass http://127.0.0.1:${servicePort};`],
    ])
    // Where this machine's nginx keeps its files: the test's directory, not /var.
    const files = join(dir, 'nginx', `run-${port}`)
    mkdirSync(files, { recursive: true })
    const machine = [
      'access_log off;',
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(
        (kind) => `${kind}_temp_path ${files}/${kind};`,
      ),
    ].join('\n')
    const conf = join(dir, 'nginx', `nginx-${port}.conf`)
    writeFileSync(conf, `${main?.code}\nevents {}\n\nhttp {\n${machine}\n\n${server}}\n`)
    return startProxy(
      'nginx',
      ['-e', 'stderr', '-c', conf, '-g', `daemon off; pid ${files}.pid;`],
      port,
    )
  })
}

/** HAProxy as the guide's "HAProxy" section sets it up; `edit` changes its block first. */
async function startHaproxy(edit: (cfg: string) => string = (cfg) => cfg): Promise<ProxyProcess> {
  const [block] = blocksUnder(GUIDE, 'HAProxy', 'haproxy')
  installCertificates('haproxy', ['api.pem', 'ca.crt'])
  return withFreePort(freePort, async (port) => {
    const sections = replaceOnce(relocate(edit(block?.code ?? ''), 'haproxy'), [
      ['bind :443 ssl', `bind 127.0.0.1:${port} ssl`],
      ['server api 127.0.0.1:3000', `server api 127.0.0.1:${servicePort}`],
    ])
    // The `defaults` the guide leaves to the reader's haproxy.cfg: timeouts only, no mode.
    const defaults =
      'defaults\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n'
    const cfg = join(dir, 'haproxy', `haproxy-${port}.cfg`)
    writeFileSync(cfg, `${defaults}\n${sections}`)
    return startProxy('haproxy', ['-db', '-f', cfg], port)
  })
}

/** One request through the proxy, over TLS (trusting the guide's CA), presenting `certificate`. */
function through(
  proxy: ProxyProcess,
  token: string,
  certificate?: TestCertificate,
  fields: Record<string, string> = {},
): Promise<Answer> {
  return send({
    port: proxy.port,
    path: ROUTE,
    headers: { authorization: `Bearer ${token}`, ...fields },
    ca,
    client: certificate,
  })
}

/** The RFC 9440 value of a certificate: what a client forging the field would write. */
const field = (certificate: TestCertificate) => `:${certificate.x509.raw.toString('base64')}:`

describe.each([
  ['nginx', () => startNginx()],
  ['HAProxy', () => startHaproxy()],
])('%s as docs/mtls.md sets it up', (_name, start) => {
  let proxy: ProxyProcess
  let token: string

  beforeAll(async () => {
    proxy = await start()
    token = await issuer.mint({ sub: 'alice' }, { certificate: client.cert })
  }, 30_000)
  afterAll(async () => {
    await proxy?.stop()
  })

  it('admits a token bound to the client certificate over a connection with that certificate', async () => {
    const answer = await through(proxy, token, client)
    expect({ status: answer.status, body: JSON.parse(answer.body) }).toEqual({
      status: 200,
      body: { user: 'alice' },
    })
    expect(received).toEqual([{ clientCert: field(client) }])
  })

  it('admits a token bound to a self-signed certificate with that certificate (RFC 8705 §2.2)', async () => {
    const bound = await issuer.mint({ sub: 'bob' }, { certificate: selfSigned.cert })
    const answer = await through(proxy, bound, selfSigned)
    expect(answer.status).toBe(200)
    expect(JSON.parse(answer.body)).toEqual({ user: 'bob' })
  })

  it('refuses the token over a connection with another certificate: 401 certificate_mismatch', async () => {
    const answer = await through(proxy, token, mallory)
    expect(answer.status).toBe(401)
    expect(answer.headers['www-authenticate']).toContain('error="invalid_token"')
    expect(refusals).toEqual(['certificate_mismatch'])
  })

  it('refuses the token over a connection without a certificate, and sends no field: 401 certificate_missing', async () => {
    const answer = await through(proxy, token)
    expect(answer.status).toBe(401)
    expect(refusals).toEqual(['certificate_missing'])
    expect(received).toEqual([{}])
  })

  it("never believes a Client-Cert the client wrote: the certificate's own bytes, sent without its key, are dropped (RFC 9440 §4)", async () => {
    // A thief holds the token and the certificate, which is public, but not its private key.
    const answer = await through(proxy, token, undefined, { 'client-cert': field(client) })
    expect(answer.status).toBe(401)
    expect(refusals).toEqual(['certificate_missing'])
    expect(received).toEqual([{}])
  })

  it("replaces a Client-Cert the client wrote with its connection's certificate", async () => {
    const answer = await through(proxy, token, mallory, { 'client-cert': field(client) })
    expect(answer.status).toBe(401)
    expect(refusals).toEqual(['certificate_mismatch'])
    expect(received).toEqual([{ clientCert: field(mallory) }])
  })

  it('removes a Client-Cert-Chain the client wrote (RFC 9440 §2.4)', async () => {
    const answer = await through(proxy, token, client, { 'client-cert-chain': field(ca) })
    expect(answer.status).toBe(200)
    expect(received).toEqual([{ clientCert: field(client) }])
  })

  it("answers the guide's curl line with the token's user", async () => {
    const [curl] = blocksUnder(GUIDE, 'HAProxy', 'sh')
    const line = replaceOnce(curl?.code ?? '', [
      ['https://localhost/', `https://localhost:${proxy.port}/`],
    ])
    expect(JSON.parse(await runShell(line, certs, { TOKEN: token }))).toEqual({ user: 'alice' })
  })
})

describe("HAProxy without the guide's settings", () => {
  /** Starts HAProxy with `edit`, runs `check`, and stops it. */
  async function withHaproxy(
    edit: (cfg: string) => string,
    check: (proxy: ProxyProcess) => Promise<void>,
  ): Promise<void> {
    const proxy = await startHaproxy(edit)
    try {
      await check(proxy)
    } finally {
      await proxy.stop()
    }
  }

  it("in TCP mode (no mode http) skips the http-request lines with a warning: the client's own Client-Cert reaches the service and is believed", async () => {
    const withoutModeHttp = (cfg: string) => {
      expect(cfg.split('    mode http\n')).toHaveLength(3)
      return cfg.replaceAll('    mode http\n', '')
    }
    const token = await issuer.mint({ sub: 'alice' }, { certificate: client.cert })
    await withHaproxy(withoutModeHttp, async (proxy) => {
      const forged = await through(proxy, token, undefined, { 'client-cert': field(client) })
      // The attack the guide's `mode http` stops: a stolen token and public bytes, admitted.
      expect(forged.status).toBe(200)
      expect(proxy.output()).toContain("'http-request' rules ignored for frontend 'api'")
    })
  })

  it('refuses to start `verify optional` without a ca-file', async () => {
    const withoutCaFile = (cfg: string) =>
      replaceOnce(cfg, [
        [' ca-file /etc/haproxy/tls/ca.crt ca-ignore-err all crt-ignore-err all', ''],
      ])
    await expect(startHaproxy(withoutCaFile)).rejects.toThrow(
      /verify is enabled but no CA file specified/,
    )
  })

  it('without ca-ignore-err and crt-ignore-err, ends the handshake of a self-signed certificate and admits the CA-signed one (RFC 8705 §2.1)', async () => {
    const onlyTheCa = (cfg: string) =>
      replaceOnce(cfg, [[' ca-ignore-err all crt-ignore-err all', '']])
    const token = await issuer.mint({ sub: 'alice' }, { certificate: client.cert })
    const bound = await issuer.mint({ sub: 'bob' }, { certificate: selfSigned.cert })
    await withHaproxy(onlyTheCa, async (proxy) => {
      await expect(through(proxy, bound, selfSigned)).rejects.toThrow()
      expect(received).toEqual([])
      expect((await through(proxy, token, client)).status).toBe(200)
    })
  })
})

describe('nginx admitting only certificates the CA signed', () => {
  it('answers 400 to a self-signed certificate before the service sees it, and admits the CA-signed one (RFC 8705 §2.1)', async () => {
    const guide = readFileSync(GUIDE, 'utf8')
    const pki = ['ssl_verify_client optional;', 'ssl_client_certificate /etc/nginx/tls/ca.crt;']
    for (const directive of pki) expect(guide).toContain(`\`${directive}\``)
    const proxy = await startNginx((http) =>
      replaceOnce(http, [
        [
          'ssl_verify_client   optional_no_ca;  # ask for a certificate, accept self-signed ones',
          pki.join('\n    '),
        ],
      ]),
    )
    try {
      const token = await issuer.mint({ sub: 'alice' }, { certificate: client.cert })
      const bound = await issuer.mint({ sub: 'bob' }, { certificate: selfSigned.cert })
      expect((await through(proxy, bound, selfSigned)).status).toBe(400)
      expect(received).toEqual([])
      expect((await through(proxy, token, client)).status).toBe(200)
    } finally {
      await proxy.stop()
    }
  })
})
