import { createServer, type Server } from 'node:http'

import express5 from 'express'
import express4 from 'express4'
import Koa3 from 'koa'
import Koa2 from 'koa2'
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as expressAdapter from '../../adapters/express/index.js'
import * as koaAdapter from '../../adapters/koa/index.js'
import type { GateOptions } from '../../src/gate/options.js'
import {
  createDpopKey,
  createTestIssuer,
  type TestDpopKey,
  type TestIssuer,
} from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS, FETCH_HOSTS } from '../helpers/apps.js'
import { NEST_APPS } from '../helpers/nest-apps.js'
import { rawRequest } from '../helpers/raw-request.js'
import { type RedisServer, startRedisServer } from '../helpers/redis.js'

/** Every adapter, NestJS on both of its platforms included. */
const EVERY_APP = [...APPS, ...NEST_APPS]

const ROUTE = '/api/v1/billing/subscriptions'
const BASE = 'https://api.example.test'
const URL_OF_ROUTE = `${BASE}${ROUTE}`
const ALGS = 'algs="ES256 EdDSA PS256 RS256"'

let issuer: TestIssuer
let key: TestDpopKey
let otherKey: TestDpopKey
let options: GateOptions

beforeAll(async () => {
  issuer = await createTestIssuer({
    realms: ['acme'],
    algorithms: ['RS256', 'ES256'],
    audience: 'gateway',
  })
  key = await createDpopKey('ES256')
  otherKey = await createDpopKey('EdDSA')
  options = {
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
    dpop: { mode: 'allowed', publicBaseUrl: BASE },
  }
})
afterAll(async () => {
  await issuer.close()
})

const PROOF_REFUSED = {
  status: 401,
  challenge: `Bearer realm="api", DPoP realm="api", error="invalid_dpop_proof", error_description="invalid DPoP proof", ${ALGS}`,
  body: { error: 'invalid_dpop_proof', error_description: 'invalid DPoP proof' },
}
const BINDING_REFUSED_DPOP = {
  status: 401,
  challenge: `Bearer realm="api", DPoP realm="api", error="invalid_token", error_description="invalid token", ${ALGS}`,
  body: { error: 'invalid_token', error_description: 'invalid token' },
}

function send(app: Server, headers: Record<string, string>, method: 'get' | 'post' = 'get') {
  return request(app)[method](ROUTE).set(headers)
}

function expectAnswer(
  res: { status: number; headers: Record<string, string>; body: unknown },
  expected: { status: number; challenge: string; body: unknown },
) {
  expect(res.status).toBe(expected.status)
  expect(res.headers['www-authenticate']).toBe(expected.challenge)
  expect(res.body).toEqual(expected.body)
}

describe.each(EVERY_APP)('%s adapter with DPoP allowed', (_name, createApp) => {
  let app: Server
  beforeAll(() => {
    app = createApp(options)
  })
  afterAll(() => {
    app.close()
  })

  it('admits a DPoP-bound token with a proof for this request', async () => {
    const token = await issuer.mint({ sub: 'alice' }, { dpop: key })
    const res = await send(app, await key.headers(token, { method: 'GET', url: URL_OF_ROUTE }))
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ authenticated: true, subject: 'alice' })
  })

  it('still admits plain bearer tokens', async () => {
    const token = await issuer.mint()
    expect((await send(app, { Authorization: `Bearer ${token}` })).status).toBe(200)
  })

  it('checks a new proof on every request, the token verdict cached or not', async () => {
    const token = await issuer.mint({}, { dpop: key })
    for (let round = 0; round < 3; round++) {
      const res = await send(app, await key.headers(token, { method: 'GET', url: URL_OF_ROUTE }))
      expect(res.status).toBe(200)
    }
    const proof = await key.proof({ method: 'GET', url: `${BASE}/other`, accessToken: token })
    expectAnswer(await send(app, { Authorization: `DPoP ${token}`, DPoP: proof }), PROOF_REFUSED)
  })

  it('refuses a proof replayed to the same instance', async () => {
    const token = await issuer.mint({}, { dpop: key })
    const headers = await key.headers(token, { method: 'GET', url: URL_OF_ROUTE })
    expect((await send(app, headers)).status).toBe(200)
    expectAnswer(await send(app, headers), PROOF_REFUSED)
  })

  it('refuses a proof for another URL', async () => {
    const token = await issuer.mint({}, { dpop: key })
    const headers = await key.headers(token, { method: 'GET', url: `${BASE}/api/v1/admin` })
    expectAnswer(await send(app, headers), PROOF_REFUSED)
  })

  it('refuses a proof for another host', async () => {
    const token = await issuer.mint({}, { dpop: key })
    const url = `https://other.example.test${ROUTE}`
    expectAnswer(await send(app, await key.headers(token, { method: 'GET', url })), PROOF_REFUSED)
  })

  it('refuses a proof for another method', async () => {
    const token = await issuer.mint({}, { dpop: key })
    const headers = await key.headers(token, { method: 'POST', url: URL_OF_ROUTE })
    expectAnswer(await send(app, headers, 'get'), PROOF_REFUSED)
  })

  it('accepts an htu that differs only in RFC 3986 normalization and query', async () => {
    const token = await issuer.mint({}, { dpop: key })
    const url = `HTTPS://API.example.test:443/api/v1/./billing/%73ubscriptions?page=2`
    const res = await send(app, await key.headers(token, { method: 'GET', url }))
    expect(res.status).toBe(200)
  })

  it('refuses a proof whose iat is outside the window', async () => {
    const token = await issuer.mint({}, { dpop: key })
    const now = Math.floor(Date.now() / 1000)
    for (const iat of [now - 120, now + 60]) {
      const proof = await key.proof({ method: 'GET', url: URL_OF_ROUTE, accessToken: token, iat })
      expectAnswer(await send(app, { Authorization: `DPoP ${token}`, DPoP: proof }), PROOF_REFUSED)
    }
  })

  it('refuses a proof made for another access token (ath)', async () => {
    const token = await issuer.mint({}, { dpop: key })
    const sibling = await issuer.mint({ sub: 'other' }, { dpop: key })
    const proof = await key.proof({ method: 'GET', url: URL_OF_ROUTE, accessToken: sibling })
    expectAnswer(await send(app, { Authorization: `DPoP ${token}`, DPoP: proof }), PROOF_REFUSED)
  })

  it('refuses a proof without ath', async () => {
    const token = await issuer.mint({}, { dpop: key })
    const proof = await key.proof({ method: 'GET', url: URL_OF_ROUTE })
    expectAnswer(await send(app, { Authorization: `DPoP ${token}`, DPoP: proof }), PROOF_REFUSED)
  })

  it('refuses a proof signed by a key other than the one the token is bound to', async () => {
    const token = await issuer.mint({}, { dpop: key })
    const headers = await otherKey.headers(token, { method: 'GET', url: URL_OF_ROUTE })
    expectAnswer(await send(app, headers), BINDING_REFUSED_DPOP)
  })

  it('refuses a proof whose header carries the private key', async () => {
    const token = await issuer.mint({}, { dpop: key })
    const proof = await key.proof({
      method: 'GET',
      url: URL_OF_ROUTE,
      accessToken: token,
      header: { jwk: { ...key.privateJwk } },
    })
    expectAnswer(await send(app, { Authorization: `DPoP ${token}`, DPoP: proof }), PROOF_REFUSED)
  })

  it.each([
    ['none', { alg: 'none' }],
    ['HS256', { alg: 'HS256' }],
    ['an algorithm the key does not fit', { alg: 'RS256' }],
    ['another typ', { typ: 'JWT' }],
    ['no jwk', { jwk: undefined }],
  ])('refuses a proof with %s', async (_what, header) => {
    const token = await issuer.mint({}, { dpop: key })
    const proof = await key.proof({ method: 'GET', url: URL_OF_ROUTE, accessToken: token, header })
    expectAnswer(await send(app, { Authorization: `DPoP ${token}`, DPoP: proof }), PROOF_REFUSED)
  })

  it('refuses an unsigned proof (alg none, empty signature)', async () => {
    const token = await issuer.mint({}, { dpop: key })
    const proof = await key.proof({ method: 'GET', url: URL_OF_ROUTE, accessToken: token })
    const [header, payload] = proof.split('.')
    const unsigned = `${Buffer.from(JSON.stringify({ typ: 'dpop+jwt', alg: 'none', jwk: key.publicJwk })).toString('base64url')}.${payload}.`
    expect(header).toBeDefined()
    expectAnswer(await send(app, { Authorization: `DPoP ${token}`, DPoP: unsigned }), PROOF_REFUSED)
  })

  it('refuses two DPoP header fields', async () => {
    const token = await issuer.mint({}, { dpop: key })
    const first = await key.proof({ method: 'GET', url: URL_OF_ROUTE, accessToken: token })
    const second = await key.proof({ method: 'GET', url: URL_OF_ROUTE, accessToken: token })
    const res = await rawRequest(app, [
      `GET ${ROUTE} HTTP/1.1`,
      `Authorization: DPoP ${token}`,
      `DPoP: ${first}`,
      `DPoP: ${second}`,
    ])
    expect(res.status).toBe(401)
    expect(res.raw).toContain('error="invalid_dpop_proof"')
    app.close()
  })

  it('refuses the DPoP scheme without a proof', async () => {
    const token = await issuer.mint({}, { dpop: key })
    expectAnswer(await send(app, { Authorization: `DPoP ${token}` }), PROOF_REFUSED)
  })

  it('refuses a bound token sent with the Bearer scheme, proof or not', async () => {
    const token = await issuer.mint({}, { dpop: key })
    const proof = await key.proof({ method: 'GET', url: URL_OF_ROUTE, accessToken: token })
    for (const headers of [
      { Authorization: `Bearer ${token}` },
      { Authorization: `Bearer ${token}`, DPoP: proof },
    ]) {
      expectAnswer(await send(app, headers), {
        status: 401,
        challenge: `Bearer realm="api", error="invalid_token", error_description="invalid token", DPoP realm="api", ${ALGS}`,
        body: { error: 'invalid_token', error_description: 'invalid token' },
      })
    }
  })

  it('refuses an unbound token sent with the DPoP scheme', async () => {
    const token = await issuer.mint()
    const headers = await key.headers(token, { method: 'GET', url: URL_OF_ROUTE })
    expectAnswer(await send(app, headers), BINDING_REFUSED_DPOP)
  })

  it('challenges both schemes when no credentials are sent', async () => {
    const res = await request(app).get(ROUTE)
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toBe(`Bearer realm="api", DPoP realm="api", ${ALGS}`)
  })
})

describe.each(EVERY_APP)('%s adapter, DPoP modes and nonces', (name, createApp) => {
  it('refuses bearer tokens with a DPoP-only challenge in required mode', async () => {
    const app = createApp({ ...options, dpop: { mode: 'required', publicBaseUrl: BASE } })
    const token = await issuer.mint()
    expectAnswer(await send(app, { Authorization: `Bearer ${token}` }), {
      status: 401,
      challenge: `DPoP realm="api", error="invalid_token", error_description="invalid token", ${ALGS}`,
      body: { error: 'invalid_token', error_description: 'invalid token' },
    })
    expect((await request(app).get(ROUTE)).headers['www-authenticate']).toBe(
      `DPoP realm="api", ${ALGS}`,
    )
    const bound = await issuer.mint({}, { dpop: key })
    const ok = await send(app, await key.headers(bound, { method: 'GET', url: URL_OF_ROUTE }))
    expect(ok.status).toBe(200)
    app.close()
  })

  it('refuses cnf-bound tokens and ignores the DPoP scheme when DPoP is off (the default)', async () => {
    const app = createApp({ ...options, dpop: { mode: 'off' } })
    const token = await issuer.mint({}, { dpop: key })
    expect((await send(app, { Authorization: `Bearer ${token}` })).status).toBe(401)
    const res = await send(app, await key.headers(token, { method: 'GET', url: URL_OF_ROUTE }))
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toBe('Bearer realm="api"')
    app.close()
  })

  it('asks for a nonce, then admits the retry that carries it', async () => {
    const app = createApp({
      ...options,
      dpop: { mode: 'allowed', publicBaseUrl: BASE, nonce: true },
    })
    const token = await issuer.mint({}, { dpop: key })
    const first = await send(app, await key.headers(token, { method: 'GET', url: URL_OF_ROUTE }))
    expect(first.status).toBe(401)
    expect(first.headers['www-authenticate']).toBe(
      `Bearer realm="api", DPoP realm="api", error="use_dpop_nonce", error_description="DPoP nonce required", ${ALGS}`,
    )
    expect(first.body).toEqual({
      error: 'use_dpop_nonce',
      error_description: 'DPoP nonce required',
    })
    const nonce = first.headers['dpop-nonce'] as string
    expect(nonce).toMatch(/^[A-Za-z0-9_-]{32}$/)
    const retry = await send(
      app,
      await key.headers(token, { method: 'GET', url: URL_OF_ROUTE, nonce }),
    )
    expect(retry.status).toBe(200)
    const forged = await send(
      app,
      await key.headers(token, {
        method: 'GET',
        url: URL_OF_ROUTE,
        nonce: `${nonce.slice(0, -2)}AA`,
      }),
    )
    expect(forged.status).toBe(401)
    expect(forged.headers['dpop-nonce']).toBe(nonce)
    app.close()
  })

  it('hands DPoP refusals, challenge and nonce included, to the framework with errorHandling: framework', async () => {
    const app = createApp({
      ...options,
      errorHandling: 'framework',
      dpop: { mode: 'allowed', publicBaseUrl: BASE, nonce: true },
    })
    const token = await issuer.mint({}, { dpop: key })
    const res = await send(app, await key.headers(token, { method: 'GET', url: URL_OF_ROUTE }))
    expect(res.status).toBe(401)
    expect(res.body).toEqual({ handledBy: 'app', code: 'ERR_DPOP_NONCE_REQUIRED' })
    expect(res.headers['www-authenticate']).toContain('error="use_dpop_nonce"')
    expect(res.headers['dpop-nonce']).toMatch(/^[A-Za-z0-9_-]{32}$/)
    app.close()
  })

  it('compares htu with an allowed Host header and the connection when no public base URL is set', async () => {
    const app = createApp({
      ...options,
      dpop: { mode: 'allowed', allowedHosts: ['gateway.test:8080'] },
    })
    const token = await issuer.mint({}, { dpop: key })
    const url = `http://gateway.test:8080${ROUTE}`
    const res = await send(app, {
      ...(await key.headers(token, { method: 'GET', url })),
      Host: 'GATEWAY.test:8080',
    })
    expect(res.status).toBe(200)
    const spoofed = await send(app, {
      ...(await key.headers(token, { method: 'GET', url: `https://api.example.test${ROUTE}` })),
      Host: 'gateway.test:8080',
      'X-Forwarded-Proto': 'https',
      'X-Forwarded-Host': 'api.example.test',
    })
    expect(spoofed.status).toBe(401)
    app.close()
  })

  it("refuses a proof for another service sent with that service's Host header", async () => {
    // Service B accepts the token's audience; a proof captured on its way to service A, never
    // used there, is sent to B with `Host: A`. Only B's own hosts can name B.
    const app = createApp({
      ...options,
      dpop: { mode: 'allowed', allowedHosts: ['b.example.test'] },
    })
    const token = await issuer.mint({}, { dpop: key })
    const own = await send(app, {
      ...(await key.headers(token, { method: 'GET', url: `http://b.example.test${ROUTE}` })),
      Host: 'b.example.test',
    })
    expect(own.status).toBe(200)
    const captured = await send(app, {
      ...(await key.headers(token, { method: 'GET', url: `http://a.example.test${ROUTE}` })),
      Host: 'a.example.test',
    })
    expectAnswer(captured, PROOF_REFUSED)
    app.close()
  })

  it.each([
    ['a percent-encoded dot-dot segment', '/api/v1/billing/x/%2e%2e/subscriptions'],
    ['an upper-case percent-encoded one', '/api/v1/billing/x/%2E%2E/subscriptions'],
    ['a mixed one', '/api/v1/billing/x/.%2e/subscriptions'],
    ['a literal dot-dot segment', '/api/v1/billing/x/../subscriptions'],
    ['a dot segment', '/api/v1/billing/./subscriptions'],
    ['an encoded dot segment', '/api/v1/billing/%2e/subscriptions'],
    ['a backslash', '/api/v1/billing\\subscriptions'],
    ['an encoded backslash', '/api/v1/billing%5Csubscriptions'],
  ])(
    'refuses a request target with %s, which a proof for the resolved URL would match',
    async (_what, path) => {
      const token = await issuer.mint({}, { dpop: key })
      const headers = await key.headers(token, { method: 'GET', url: URL_OF_ROUTE })
      const app = createApp(options)
      const res = await rawRequest(app, [
        `GET ${path} HTTP/1.1`,
        `Authorization: ${headers.Authorization}`,
        `DPoP: ${headers.DPoP}`,
      ])
      app.close()
      if (FETCH_HOSTS.has(name) && new URL(path, 'http://x').pathname === ROUTE) {
        // A Fetch host resolves the target (WHATWG URL) before anything sees it: the route it
        // serves is the resolved one, the very URL the proof names.
        expect(res.status).toBe(200)
        return
      }
      expect(res.status).toBe(401)
      expect(res.raw).toContain('error="invalid_dpop_proof"')
    },
  )

  it('reads X-Forwarded-Proto and X-Forwarded-Host only when told to, and only for allowed hosts', async () => {
    const app = createApp({
      ...options,
      dpop: { mode: 'allowed', trustForwardedHeaders: true, allowedHosts: ['api.example.test'] },
    })
    const token = await issuer.mint({}, { dpop: key })
    const res = await send(app, {
      ...(await key.headers(token, { method: 'GET', url: `https://api.example.test${ROUTE}` })),
      'X-Forwarded-Proto': 'https',
      'X-Forwarded-Host': 'api.example.test',
    })
    expect(res.status).toBe(200)
    const other = await send(app, {
      ...(await key.headers(token, { method: 'GET', url: `https://evil.example${ROUTE}` })),
      'X-Forwarded-Proto': 'https',
      'X-Forwarded-Host': 'evil.example',
    })
    expectAnswer(other, PROOF_REFUSED)
    app.close()
  })
})

describe('DPoP replay across instances sharing Redis', () => {
  let redis: RedisServer
  beforeAll(async () => {
    redis = await startRedisServer()
  })
  afterAll(async () => {
    await redis.stop()
  })

  it('refuses on a second instance (another framework) a proof the first one accepted', async () => {
    const client = await redis.client()
    const shared: GateOptions = {
      ...options,
      dpop: { mode: 'allowed', publicBaseUrl: BASE, replay: { store: { redis: client } } },
    }
    const instances = EVERY_APP.map(([, createApp]) => createApp(shared))
    const token = await issuer.mint({}, { dpop: key })
    const headers = await key.headers(token, { method: 'GET', url: URL_OF_ROUTE })
    const [first, ...others] = instances as unknown as [Server, ...Server[]]
    expect((await send(first, headers)).status).toBe(200)
    for (const other of others) expectAnswer(await send(other, headers), PROOF_REFUSED)
    const fresh = await key.headers(token, { method: 'GET', url: URL_OF_ROUTE })
    expect((await send(others[0] as Server, fresh)).status).toBe(200)
    for (const instance of instances) instance.close()
  })

  it('accepts the replay on a second instance that keeps proofs in its own memory', async () => {
    const [first, second] = [APPS[0], APPS[2]].map((entry) => entry?.[1](options)) as unknown as [
      Server,
      Server,
    ]
    const token = await issuer.mint({}, { dpop: key })
    const headers = await key.headers(token, { method: 'GET', url: URL_OF_ROUTE })
    expect((await send(first, headers)).status).toBe(200)
    // Why the shared store exists: a local-only cache cannot see what another instance accepted.
    expect((await send(second, headers)).status).toBe(200)
    first.close()
    second.close()
  })

  it('answers 503 with Retry-After, never admits, when the replay store is down', async () => {
    const own = await startRedisServer()
    const client = await own.client()
    const app = APPS[0]?.[1]({
      ...options,
      dpop: { mode: 'allowed', publicBaseUrl: BASE, replay: { store: { redis: client } } },
    }) as Server
    await own.kill()
    const token = await issuer.mint({}, { dpop: key })
    const res = await send(app, await key.headers(token, { method: 'GET', url: URL_OF_ROUTE }))
    expect(res.status).toBe(503)
    expect(res.headers['retry-after']).toBe('1')
    expect(res.body).toEqual({
      error: 'temporarily_unavailable',
      error_description: 'replay cache unavailable',
    })
    app.close()
    await own.stop()
  })
})

/**
 * An app that records what a refusal must leave untouched: whether the route handler ran, and the
 * `auth` the request carried when its answer went out (read outside the gate, so an adapter that
 * set it and then refused would show).
 */
interface WitnessApp {
  readonly server: Server
  readonly handled: number
  readonly authSeen: ReadonlyArray<unknown>
}

function expressWitness(express: typeof express5, gateOptions: GateOptions): WitnessApp {
  const app = express()
  const seen = { handled: 0, authSeen: [] as unknown[] }
  app.use((req, res, next) => {
    res.on('finish', () => seen.authSeen.push(req.auth))
    next()
  })
  app.use(expressAdapter.tollgate(gateOptions))
  app.get(ROUTE, (_req, res) => {
    seen.handled += 1
    res.json({ handled: true })
  })
  return Object.assign(seen, { server: createServer(app) })
}

function koaWitness(Koa: typeof Koa3, gateOptions: GateOptions): WitnessApp {
  const app = new Koa<koaAdapter.TollgateState>()
  app.silent = true
  const seen = { handled: 0, authSeen: [] as unknown[] }
  app.use(async (ctx, next) => {
    try {
      await next()
    } finally {
      seen.authSeen.push(ctx.state.auth)
    }
  })
  app.use(koaAdapter.tollgate(gateOptions))
  app.use((ctx) => {
    seen.handled += 1
    ctx.body = { handled: true }
  })
  return Object.assign(seen, { server: createServer(app.callback()) })
}

const WITNESSES: ReadonlyArray<readonly [string, (options: GateOptions) => WitnessApp]> = [
  ['express 5', (o) => expressWitness(express5, o)],
  ['express 4', (o) => expressWitness(express4 as unknown as typeof express5, o)],
  ['koa 3', (o) => koaWitness(Koa3, o)],
  ['koa 2', (o) => koaWitness(Koa2 as unknown as typeof Koa3, o)],
]

describe.each(WITNESSES)('%s adapter, an mTLS-bound token under DPoP', (_name, createWitness) => {
  let redis: RedisServer
  let witness: WitnessApp
  let replayEntries: () => Promise<number>
  beforeAll(async () => {
    redis = await startRedisServer()
    const client = await redis.client()
    replayEntries = () => client.dbsize()
    witness = createWitness({
      ...options,
      dpop: { mode: 'allowed', publicBaseUrl: BASE, replay: { store: { redis: client } } },
    })
  })
  afterAll(async () => {
    witness.server.close()
    await redis.stop()
  })

  // x5t#S256 (RFC 8705) binds the token to a client certificate, which tollgate cannot see.
  const mtlsToken = () =>
    issuer.mint({ cnf: { 'x5t#S256': 'bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2' } })

  it('admits a DPoP-bound token, runs the handler and takes a replay entry (control)', async () => {
    const token = await issuer.mint({ sub: 'alice' }, { dpop: key })
    const before = { handled: witness.handled, entries: await replayEntries() }
    const res = await send(
      witness.server,
      await key.headers(token, { method: 'GET', url: URL_OF_ROUTE }),
    )
    expect(res.status).toBe(200)
    expect(witness.handled).toBe(before.handled + 1)
    expect(witness.authSeen.at(-1)).toMatchObject({ subject: 'alice' })
    expect(await replayEntries()).toBe(before.entries + 1)
  })

  it.each([
    ['with a proof by a key, under the DPoP scheme', 'DPoP'],
    ['as a bearer token', 'Bearer'],
  ] as const)('refuses it %s: no handler, no auth, no replay entry', async (_how, scheme) => {
    const token = await mtlsToken()
    const headers =
      scheme === 'DPoP'
        ? await key.headers(token, { method: 'GET', url: URL_OF_ROUTE })
        : { Authorization: `Bearer ${token}` }
    const before = {
      handled: witness.handled,
      answers: witness.authSeen.length,
      entries: await replayEntries(),
    }
    const res = await send(witness.server, headers)
    expectAnswer(
      res,
      scheme === 'DPoP'
        ? BINDING_REFUSED_DPOP
        : {
            status: 401,
            challenge: `Bearer realm="api", error="invalid_token", error_description="invalid token", DPoP realm="api", ${ALGS}`,
            body: { error: 'invalid_token', error_description: 'invalid token' },
          },
    )
    expect(witness.handled).toBe(before.handled)
    expect(witness.authSeen.length).toBe(before.answers + 1)
    expect(witness.authSeen.at(-1)).toBeUndefined()
    expect(await replayEntries()).toBe(before.entries)
  })
})

describe('all adapters with DPoP', () => {
  it('give identical status, headers and body for the same DPoP requests', async () => {
    // One nonce secret for every instance: a nonce from one is valid on all of them.
    const nonce = { secret: 'a shared secret of at least thirty-two characters' }
    const servers = EVERY_APP.map(([, createApp]) =>
      createApp({ ...options, dpop: { mode: 'allowed', publicBaseUrl: BASE, nonce } }),
    )
    const token = await issuer.mint({}, { dpop: key })
    const first = await send(
      servers[0] as Server,
      await key.headers(token, { method: 'GET', url: URL_OF_ROUTE }),
    )
    const current = first.headers['dpop-nonce'] as string
    const cases: Array<(server: Server) => Promise<Record<string, string>>> = [
      async () => key.headers(token, { method: 'GET', url: URL_OF_ROUTE }),
      async () => key.headers(token, { method: 'GET', url: URL_OF_ROUTE, nonce: current }),
      async () => key.headers(token, { method: 'GET', url: `${BASE}/elsewhere`, nonce: current }),
      async () => otherKey.headers(token, { method: 'GET', url: URL_OF_ROUTE, nonce: current }),
      async () => ({ Authorization: `Bearer ${token}` }),
      async () => ({ Authorization: `DPoP ${token}` }),
      async () => ({}),
    ]
    for (const makeHeaders of cases) {
      const answers = []
      for (const server of servers) {
        const res = await send(server, await makeHeaders(server))
        answers.push({
          status: res.status,
          challenge: res.headers['www-authenticate'],
          nonce: res.headers['dpop-nonce'],
          contentType: res.headers['content-type'],
          cacheControl: res.headers['cache-control'],
          body: res.text,
        })
      }
      for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0])
    }
    for (const server of servers) server.close()
  })
})
