/**
 * Certificate-bound tokens (RFC 8705 §3) through every adapter, over real TLS on loopback: the
 * certificate of the request's own TLS connection (Express, Koa, Fastify, NestJS on both platforms;
 * Hono on @hono/node-server's socket; the Fetch adapter given `{ socket }`), and the RFC 9440
 * `Client-Cert` field from a trusted proxy only. Attacks: the field from an untrusted address, a
 * mismatched certificate, a bound token without a certificate, malformed and repeated fields.
 */
import type { Server } from 'node:http'
import { Agent } from 'node:https'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { GateEvent } from '../../src/events.js'
import type { GateOptions } from '../../src/gate/options.js'
import {
  createDpopKey,
  createTestIssuer,
  type TestDpopKey,
  type TestIssuer,
} from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS, type AppFactory } from '../helpers/apps.js'
import { MTLS_APPS as EVERY_APP } from '../helpers/mtls-apps.js'
import {
  type Answer,
  clientCertField,
  clientCertProxy,
  close,
  httpsServerOf,
  listen,
  makeCertificate,
  send,
  type TestCertificate,
} from '../helpers/tls.js'

const ROUTE = '/api/v1/billing/subscriptions'
const BASE = 'https://api.example.test'

let issuer: TestIssuer
let serverCert: TestCertificate
let alice: TestCertificate
let mallory: TestCertificate
let dpopKey: TestDpopKey

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  serverCert = makeCertificate('api.test', '127.0.0.1')
  alice = makeCertificate('alice-client')
  mallory = makeCertificate('mallory-client')
  dpopKey = await createDpopKey('ES256')
})
afterAll(async () => {
  await issuer.close()
})

function gateOptions(extra: Partial<GateOptions>, events: GateEvent[]): GateOptions {
  return {
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
    onEvent: (event) => void events.push(event),
    ...extra,
  }
}

const INVALID_TOKEN = 'Bearer realm="api", error="invalid_token", error_description="invalid token"'

/** A 401 invalid_token (RFC 8705 §3), and the reason the gate reported for it. */
function expectRefused(answer: Answer, events: GateEvent[], reason: string) {
  expect(answer.status).toBe(401)
  expect(answer.headers['www-authenticate']).toBe(INVALID_TOKEN)
  expect(JSON.parse(answer.body)).toEqual({
    error: 'invalid_token',
    error_description: 'invalid token',
  })
  const last = events.filter((event) => event.type === 'rejected').at(-1)
  expect(last).toMatchObject({ type: 'rejected', reason, status: 401 })
}

function expectAdmitted(answer: Answer) {
  expect(answer.status, answer.body).toBe(200)
  expect(JSON.parse(answer.body)).toMatchObject({ authenticated: true })
}

describe.each(EVERY_APP)('%s: certificate-bound tokens over TLS', (_name, createApp) => {
  const events: GateEvent[] = []
  let server: Server
  let port: number
  beforeAll(async () => {
    // The Client-Cert field would be trusted from 10.0.0.0/8 only: never from this loopback client.
    const plain = createApp(gateOptions({ mtls: { trustedProxies: ['10.0.0.0/8'] } }, events))
    server = httpsServerOf(plain, serverCert)
    port = await listen(server)
  })
  afterAll(async () => {
    await close(server)
  })
  const over = (headers: Record<string, string>, client?: TestCertificate) =>
    send({ port, path: ROUTE, headers, ca: serverCert, client })

  it('admits a token bound to the certificate the client presented in the TLS handshake', async () => {
    const token = await issuer.mint({}, { certificate: alice.cert })
    expectAdmitted(await over({ authorization: `Bearer ${token}` }, alice))
  })

  it('refuses it with another client certificate (certificate_mismatch)', async () => {
    const token = await issuer.mint({}, { certificate: alice.cert })
    expectRefused(
      await over({ authorization: `Bearer ${token}` }, mallory),
      events,
      'certificate_mismatch',
    )
  })

  it('refuses it without a client certificate (certificate_missing)', async () => {
    const token = await issuer.mint({}, { certificate: alice.cert })
    expectRefused(await over({ authorization: `Bearer ${token}` }), events, 'certificate_missing')
  })

  it('ignores a Client-Cert field from an address that is not a trusted proxy', async () => {
    const token = await issuer.mint({}, { certificate: alice.cert })
    const headers = { authorization: `Bearer ${token}`, 'client-cert': clientCertField(alice) }
    expectRefused(await over(headers), events, 'certificate_missing')
    // The field does not replace the connection's own certificate either.
    expectRefused(await over(headers, mallory), events, 'certificate_mismatch')
    expectAdmitted(await over({ ...headers, 'client-cert': clientCertField(mallory) }, alice))
  })

  it.each(['TLSv1.3', 'TLSv1.2'] as const)(
    'judges every request of a kept-alive %s connection by its certificate',
    async (maxVersion) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1, maxVersion })
      const sockets = new Set<unknown>()
      agent.on('free', (socket) => sockets.add(socket))
      try {
        const mine = await issuer.mint({}, { certificate: alice.cert })
        const theirs = await issuer.mint({}, { certificate: mallory.cert })
        const on = (token: string) =>
          send({
            port,
            path: ROUTE,
            headers: { authorization: `Bearer ${token}` },
            ca: serverCert,
            client: alice,
            agent,
          })
        expectAdmitted(await on(mine))
        expectRefused(await on(theirs), events, 'certificate_mismatch')
        expectAdmitted(await on(mine))
        expect(sockets.size).toBe(1)
      } finally {
        agent.destroy()
      }
    },
  )

  it('admits an unbound bearer token as before, certificate or not', async () => {
    const token = await issuer.mint()
    expectAdmitted(await over({ authorization: `Bearer ${token}` }))
    expectAdmitted(await over({ authorization: `Bearer ${token}` }, alice))
  })

  it('judges the certificate on every request: a cached token is refused on another connection', async () => {
    const token = await issuer.mint({}, { certificate: alice.cert })
    expectAdmitted(await over({ authorization: `Bearer ${token}` }, alice))
    expectRefused(
      await over({ authorization: `Bearer ${token}` }, mallory),
      events,
      'certificate_mismatch',
    )
    expectAdmitted(await over({ authorization: `Bearer ${token}` }, alice))
  })

  it('refuses a cnf with a malformed thumbprint or an unknown member (sender_constrained)', async () => {
    const short = await issuer.mint({ cnf: { 'x5t#S256': 'abc' } })
    expectRefused(
      await over({ authorization: `Bearer ${short}` }, alice),
      events,
      'sender_constrained',
    )
    const jkt = await issuer.mint({}, { dpop: dpopKey, certificate: alice.cert })
    // DPoP is off on this gate: a cnf.jkt cannot be checked.
    expectRefused(
      await over({ authorization: `Bearer ${jkt}` }, alice),
      events,
      'sender_constrained',
    )
  })
})

describe.each(EVERY_APP)(
  '%s: behind a trusted proxy (RFC 9440 Client-Cert)',
  (_name, createApp) => {
    const events: GateEvent[] = []
    let server: Server
    let tlsServer: Server
    let port: number
    let tlsPort: number
    beforeAll(async () => {
      const options = gateOptions({ mtls: { trustedProxies: ['127.0.0.1', '::1'] } }, events)
      server = createApp(options)
      port = await listen(server)
      tlsServer = httpsServerOf(createApp(options), serverCert)
      tlsPort = await listen(tlsServer)
    })
    afterAll(async () => {
      await close(server)
      await close(tlsServer)
    })
    const proxied = (headers: Record<string, string> | ReadonlyArray<readonly [string, string]>) =>
      send({ port, path: ROUTE, headers })

    it('admits a token bound to the certificate in the proxy field', async () => {
      const token = await issuer.mint({}, { certificate: alice.cert })
      expectAdmitted(
        await proxied({ authorization: `Bearer ${token}`, 'client-cert': clientCertField(alice) }),
      )
    })

    it('refuses another certificate, or none (certificate_mismatch, certificate_missing)', async () => {
      const token = await issuer.mint({}, { certificate: alice.cert })
      const authorization = `Bearer ${token}`
      expectRefused(
        await proxied({ authorization, 'client-cert': clientCertField(mallory) }),
        events,
        'certificate_mismatch',
      )
      expectRefused(await proxied({ authorization }), events, 'certificate_missing')
    })

    it('refuses a malformed field (certificate_header): PEM, URL-encoded PEM, no colons, not DER', async () => {
      const token = await issuer.mint({}, { certificate: alice.cert })
      const authorization = `Bearer ${token}`
      const base64 = alice.x509.raw.toString('base64')
      for (const field of [
        encodeURIComponent(alice.cert), // nginx's $ssl_client_escaped_cert
        base64,
        `:${alice.x509.raw.toString('base64url')}:`,
        `:${Buffer.from('not a certificate').toString('base64')}:`,
        `"${base64}"`,
      ]) {
        expectRefused(
          await proxied({ authorization, 'client-cert': field }),
          events,
          'certificate_header',
        )
      }
    })

    it('refuses a field with several certificates, as a list or as repeated fields', async () => {
      const token = await issuer.mint({}, { certificate: alice.cert })
      const authorization = `Bearer ${token}`
      expectRefused(
        await proxied({
          authorization,
          'client-cert': `${clientCertField(alice)}, ${clientCertField(mallory)}`,
        }),
        events,
        'certificate_header',
      )
      expectRefused(
        await proxied([
          ['authorization', authorization],
          ['client-cert', clientCertField(alice)],
          ['client-cert', clientCertField(alice)],
        ]),
        events,
        'certificate_header',
      )
    })

    it("reads only the field from a proxy: the proxy connection's own TLS certificate is not the client's", async () => {
      const token = await issuer.mint({}, { certificate: alice.cert })
      const answer = await send({
        port: tlsPort,
        path: ROUTE,
        headers: { authorization: `Bearer ${token}` },
        ca: serverCert,
        client: alice,
      })
      expectRefused(answer, events, 'certificate_missing')
    })

    it('never reads the field for an unbound token: a broken field does not refuse it', async () => {
      const token = await issuer.mint()
      expectAdmitted(await proxied({ authorization: `Bearer ${token}`, 'client-cert': 'garbage' }))
    })
  },
)

describe.each(EVERY_APP)(
  '%s: behind a TLS-terminating proxy on loopback, the app listening on every address',
  (_name, createApp) => {
    const events: GateEvent[] = []
    let app: Server
    let proxy: Server
    let proxyPort: number
    beforeAll(async () => {
      // Listening on '::', the app sees the IPv4 proxy as ::ffff:127.0.0.1: the IPv4 entry covers it.
      app = createApp(gateOptions({ mtls: { trustedProxies: ['127.0.0.1'] } }, events))
      const appPort = await listen(app, '::')
      proxy = clientCertProxy({ port: appPort }, serverCert)
      proxyPort = await listen(proxy)
    })
    afterAll(async () => {
      await close(proxy)
      await close(app)
    })
    const through = (headers: Record<string, string>, client?: TestCertificate) =>
      send({ port: proxyPort, path: ROUTE, headers, ca: serverCert, client })

    it('admits a bound token with its certificate, refuses it with another or none', async () => {
      const token = await issuer.mint({}, { certificate: alice.cert })
      const authorization = `Bearer ${token}`
      expectAdmitted(await through({ authorization }, alice))
      expectRefused(await through({ authorization }, mallory), events, 'certificate_mismatch')
      expectRefused(await through({ authorization }), events, 'certificate_missing')
    })

    it("a client's own Client-Cert field does not get through the proxy", async () => {
      const token = await issuer.mint({}, { certificate: alice.cert })
      const forged = { authorization: `Bearer ${token}`, 'client-cert': clientCertField(alice) }
      expectRefused(await through(forged), events, 'certificate_missing')
      expectRefused(await through(forged, mallory), events, 'certificate_mismatch')
    })
  },
)

describe.each(EVERY_APP)('%s: mode required, and with DPoP', (_name, createApp) => {
  const events: GateEvent[] = []
  let required: Server
  let withDpop: Server
  let requiredPort: number
  let dpopPort: number
  beforeAll(async () => {
    required = httpsServerOf(
      createApp(gateOptions({ mtls: { mode: 'required' } }, events)),
      serverCert,
    )
    requiredPort = await listen(required)
    withDpop = httpsServerOf(
      createApp(gateOptions({ mtls: {}, dpop: { mode: 'allowed', publicBaseUrl: BASE } }, events)),
      serverCert,
    )
    dpopPort = await listen(withDpop)
  })
  afterAll(async () => {
    await close(required)
    await close(withDpop)
  })

  it('refuses an unbound token with mtls.mode required (certificate_required)', async () => {
    const token = await issuer.mint()
    const answer = await send({
      port: requiredPort,
      path: ROUTE,
      headers: { authorization: `Bearer ${token}` },
      ca: serverCert,
      client: alice,
    })
    expectRefused(answer, events, 'certificate_required')
    const bound = await issuer.mint({}, { certificate: alice.cert })
    expectAdmitted(
      await send({
        port: requiredPort,
        path: ROUTE,
        headers: { authorization: `Bearer ${bound}` },
        ca: serverCert,
        client: alice,
      }),
    )
  })

  it('admits a token bound to a DPoP key and a certificate only when both hold', async () => {
    const token = await issuer.mint({}, { dpop: dpopKey, certificate: alice.cert })
    const headers = () => dpopKey.headers(token, { method: 'GET', url: `${BASE}${ROUTE}` })
    const at = async (client?: TestCertificate, fields?: Record<string, string>) =>
      send({
        port: dpopPort,
        path: ROUTE,
        headers: fields ?? (await headers()),
        ca: serverCert,
        client,
      })
    expectAdmitted(await at(alice))
    const dpopChallenge =
      'Bearer realm="api", DPoP realm="api", error="invalid_token", error_description="invalid token", algs="ES256 EdDSA PS256 RS256"'
    const mismatch = await at(mallory)
    expect(mismatch.status).toBe(401)
    expect(mismatch.headers['www-authenticate']).toBe(dpopChallenge)
    expect(events.filter((event) => event.type === 'rejected').at(-1)).toMatchObject({
      reason: 'certificate_mismatch',
    })
    const missing = await at(undefined)
    expect(missing.status).toBe(401)
    expect(events.filter((event) => event.type === 'rejected').at(-1)).toMatchObject({
      reason: 'certificate_missing',
    })
    // The right certificate without the proof: a DPoP-bound token sent as a bearer token.
    const bearer = await at(alice, { authorization: `Bearer ${token}` })
    expect(bearer.status).toBe(401)
    expect(events.filter((event) => event.type === 'rejected').at(-1)).toMatchObject({
      reason: 'dpop_binding',
    })
  })
})

describe('a gate without mtls', () => {
  it('refuses a certificate-bound token it cannot check (sender_constrained), certificate or not', async () => {
    const events: GateEvent[] = []
    const [, createApp] = APPS[0] as readonly [string, AppFactory]
    const server = httpsServerOf(createApp(gateOptions({}, events)), serverCert)
    const port = await listen(server)
    try {
      const token = await issuer.mint({}, { certificate: alice.cert })
      const answer = await send({
        port,
        path: ROUTE,
        headers: { authorization: `Bearer ${token}` },
        ca: serverCert,
        client: alice,
      })
      expectRefused(answer, events, 'sender_constrained')
    } finally {
      await close(server)
    }
  })
})
