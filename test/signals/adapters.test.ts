/**
 * The push endpoint through every adapter (RFC 8935 over real HTTP): mounted before the gate as
 * `auth.sharedSignals(receiver)`, it answers a pushed SET with 202 and the gate refuses the
 * subject's token on the next request; refusals have the same status, headers and body
 * everywhere.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

import express5 from 'express'
import express4 from 'express4'
import fastify5 from 'fastify'
import fastify4 from 'fastify4'
import { Hono } from 'hono'
import Koa3 from 'koa'
import Koa2 from 'koa2'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import * as expressAdapter from '../../adapters/express/index.js'
import * as fastifyAdapter from '../../adapters/fastify/index.js'
import * as fetchAdapter from '../../adapters/fetch/index.js'
import * as honoAdapter from '../../adapters/hono/index.js'
import * as koaAdapter from '../../adapters/koa/index.js'
import type { GateOptions } from '../../src/gate/options.js'
import type { SignalReceiverOptions } from '../../src/signals/options.js'
import { createSignalReceiver } from '../../src/signals/receiver.js'
import { SSF_EVENTS } from '../../src/testing/ssf-transmitter.js'
import { keycloak } from '../../src/token/issuers.js'
import { fetchListener } from '../helpers/fetch-server.js'
import {
  AUDIENCE,
  nowSeconds,
  PUSH_AUTHORIZATION,
  type SignalsWorld,
  startWorld,
} from './fixtures.js'

const PUSH_PATH = '/ssf/events'

let world: SignalsWorld
beforeAll(async () => {
  world = await startWorld()
})
afterAll(async () => {
  await world.close()
})

type Started = { readonly server: Server; readonly close: () => Promise<void> }
type Signals = Omit<SignalReceiverOptions, 'gate'>

function gateOptions(): GateOptions {
  return {
    issuers: keycloak({ authUrl: world.issuer.url, realms: ['acme'] }),
    audience: 'gateway',
    revocation: {},
  }
}
function signalOptions(): Signals {
  return {
    transmitter: { issuer: world.transmitter.issuer },
    audience: AUDIENCE,
    authorization: PUSH_AUTHORIZATION,
  }
}

const ok = { ok: true }

const APPS: ReadonlyArray<[string, () => Server]> = [
  ...(
    [
      ['express 5', express5],
      ['express 4', express4],
    ] as const
  ).map(([name, express]): [string, () => Server] => [
    name,
    () => {
      const app = (express as typeof express5)()
      // A body parser of the application's, before everything: the endpoint reads what it left.
      app.use((express as typeof express5).text({ type: 'text/plain' }))
      const auth = expressAdapter.tollgate(gateOptions())
      const signals = createSignalReceiver({ gate: auth.gate, ...signalOptions() })
      app.post(PUSH_PATH, auth.sharedSignals(signals))
      app.use(auth)
      app.get('/me', (_req, res) => res.json(ok))
      return createServer(app)
    },
  ]),
  ...(
    [
      ['koa 3', Koa3],
      ['koa 2', Koa2],
    ] as const
  ).map(([name, Koa]): [string, () => Server] => [
    name,
    () => {
      const app = new (Koa as typeof Koa3)()
      const auth = koaAdapter.tollgate(gateOptions())
      const signals = createSignalReceiver({ gate: auth.gate, ...signalOptions() })
      const push = auth.sharedSignals(signals)
      app.use(async (ctx, next) => (ctx.path === PUSH_PATH ? push(ctx, next) : next()))
      app.use(auth)
      app.use((ctx) => {
        ctx.body = ok
      })
      return createServer(app.callback())
    },
  ]),
  ...(
    [
      ['fastify 5', fastify5],
      ['fastify 4', fastify4],
    ] as const
  ).map(([name, Fastify]): [string, () => Server] => [
    name,
    () => {
      let ready: PromiseLike<unknown> = Promise.resolve()
      const app = (Fastify as typeof fastify5)({
        serverFactory: (handler) =>
          createServer((req, res) => void ready.then(() => handler(req, res))),
      })
      // Fastify answers 415 to a media type without a parser: this one leaves the body to tollgate.
      app.addContentTypeParser('*', (_request, _payload, done) => done(null))
      const auth = fastifyAdapter.tollgate(gateOptions())
      const signals = createSignalReceiver({ gate: auth.gate, ...signalOptions() })
      app.post(PUSH_PATH, auth.sharedSignals(signals))
      app.register(auth)
      app.get('/me', async () => ok)
      ready = app.ready()
      return app.server
    },
  ]),
  [
    'hono',
    () => {
      const app = new Hono()
      const auth = honoAdapter.tollgate(gateOptions())
      const signals = createSignalReceiver({ gate: auth.gate, ...signalOptions() })
      app.post(PUSH_PATH, auth.sharedSignals(signals))
      app.use(auth)
      app.get('/me', (c) => c.json(ok))
      return createServer(fetchListener(app.fetch))
    },
  ],
  [
    'fetch',
    () => {
      const auth = fetchAdapter.tollgate(gateOptions())
      const signals = createSignalReceiver({ gate: auth.gate, ...signalOptions() })
      const push = auth.sharedSignals(signals)
      const me = auth.withAuth(() => Response.json(ok))
      return createServer(
        fetchListener((request) =>
          new URL(request.url).pathname === PUSH_PATH && request.method === 'POST'
            ? push(request)
            : me(request),
        ),
      )
    },
  ],
]

async function listen(make: () => Server): Promise<Started & { url: string }> {
  const server = make()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.()
        server.close(() => resolve())
      }),
  }
}

async function post(url: string, body: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}${PUSH_PATH}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/secevent+jwt',
      authorization: PUSH_AUTHORIZATION,
      ...headers,
    },
    body,
  })
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    cache: response.headers.get('cache-control'),
    body: await response.text(),
  }
}

const user = (sub: string) => ({ format: 'iss_sub', iss: world.tokenIssuer, sub })

describe.each(APPS)('the push endpoint on %s', (_name, make) => {
  it('answers 202 to a pushed account-disabled, and the gate refuses the user on the next request', async () => {
    const app = await listen(make)
    try {
      const sub = `user-${Math.random()}`
      const token = await world.issuer.mint({ sub, iat: nowSeconds() - 30 })
      const me = () =>
        fetch(`${app.url}/me`, { headers: { authorization: `Bearer ${token}` } }).then(
          (r) => r.status,
        )
      expect(await me()).toBe(200)
      const set = await world.transmitter.sign(SSF_EVENTS.accountDisabled, user(sub))
      expect(await post(app.url, set.token)).toMatchObject({
        status: 202,
        body: '',
        cache: 'no-store',
      })
      expect(await me()).toBe(401)
    } finally {
      await app.close()
    }
  })
})

describe('every adapter answers refusals alike', () => {
  it('the same status, media type and body for each refusal', async () => {
    const apps = await Promise.all(APPS.map(([, make]) => listen(make)))
    try {
      const forged = await world.transmitter.sign(
        SSF_EVENTS.accountDisabled,
        user('x'),
        {},
        { key: 'other' },
      )
      const cases: Array<[string, Record<string, string>]> = [
        [forged.token, {}],
        [forged.token, { authorization: 'Bearer wrong' }],
        ['x'.repeat(20_000), {}],
        [forged.token, { 'content-type': 'text/plain' }],
      ]
      for (const [body, headers] of cases) {
        const answers = await Promise.all(apps.map((app) => post(app.url, body, headers)))
        expect(answers[0]?.status).toBe(400)
        for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0])
      }
    } finally {
      await Promise.all(apps.map((app) => app.close()))
    }
  })

  it('sharedSignals() refuses what is not a receiver', () => {
    const auth = expressAdapter.tollgate(gateOptions())
    expect(() => auth.sharedSignals({} as never)).toThrow(
      '"receiver" must be createSignalReceiver(…)',
    )
    void auth.gate.close()
  })
})
