/**
 * `tollgate/hono` on Bun, Deno and workerd: the same Hono app (test/runtimes/hono-app.ts: the
 * middleware on `/api/*`, `requireScopes` on one route) bundled and served by each runtime's own
 * server, and on Node as the reference. Each request goes byte for byte the same over a raw socket
 * to both; the answers must have the same status, fields and body (the host's own fields aside,
 * see `comparableAnswer`), and each is checked for what docs/runtimes.md says it is.
 */
import type { Server } from 'node:http'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { fetchListener } from '../helpers/fetch-server.js'
import {
  answerField,
  comparableAnswer,
  exchange,
  RUNTIMES,
  type RuntimeServer,
  runtimeBundles,
  startHonoRuntime,
} from '../helpers/runtimes.js'
import type { RuntimeGateConfig } from './app.js'
import {
  HONO_ORDERS_PATH,
  HONO_PROFILE_PATH,
  type HonoRuntimeConfig,
  honoRuntimeApp,
} from './hono-app.js'

let issuer: TestIssuer
let bundles: Awaited<ReturnType<typeof runtimeBundles>>
let config: HonoRuntimeConfig

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  bundles = await runtimeBundles()
  const gate: RuntimeGateConfig = { authUrl: issuer.url, realms: ['acme'], audience: 'gateway' }
  config = {
    gates: {
      main: gate,
      limited: {
        ...gate,
        options: {
          tenant: { claim: 'tenant' },
          rateLimit: { windows: [{ points: 2, durationSeconds: 60 }] },
        },
      },
    },
  }
})
afterAll(async () => {
  bundles?.remove()
  await issuer?.close()
})

const get = (path: string, ...fields: string[]) => [`GET ${path} HTTP/1.1`, ...fields]
const bearer = (token: string) => `Authorization: Bearer ${token}`

describe.each(RUNTIMES)('tollgate/hono on %s', (runtime) => {
  let server: RuntimeServer
  let reference: Server
  let referencePort: number

  beforeAll(async () => {
    server = await startHonoRuntime(runtime, bundles.directory, config)
    // A fresh app of its own: its limiter counts only the requests sent to it.
    reference = createServer(fetchListener(honoRuntimeApp(config).fetch))
    await new Promise<void>((listening) => reference.listen(0, '127.0.0.1', listening))
    referencePort = (reference.address() as AddressInfo).port
  })
  afterAll(async () => {
    await server?.stop()
    reference?.close()
  })

  /** The same request lines to the runtime and to Node; the runtime's answer, once compared. */
  async function ask(lines: string[]) {
    const onRuntime = await exchange(server.port, lines)
    const onNode = await exchange(referencePort, lines)
    expect(comparableAnswer(onRuntime), server.output()).toEqual(comparableAnswer(onNode))
    return onRuntime
  }

  it('refuses a request without a token with 401 and a bare challenge', async () => {
    const answer = await ask(get(`/main${HONO_ORDERS_PATH}`))
    expect(answer.status).toBe(401)
    expect(answerField(answer, 'www-authenticate')).toBe('Bearer realm="api"')
  })

  it('refuses an expired token with 401 invalid_token', async () => {
    const expired = await issuer.mint({ exp: Math.floor(Date.now() / 1000) - 60 })
    const answer = await ask(get(`/main${HONO_ORDERS_PATH}`, bearer(expired)))
    expect(answer.status).toBe(401)
    expect(answerField(answer, 'www-authenticate')).toBe(
      'Bearer realm="api", error="invalid_token", error_description="token expired"',
    )
  })

  it('refuses a token without the guard’s scope with 403 insufficient_scope', async () => {
    const token = await issuer.mint({ sub: 'alice', scope: 'openid' })
    const answer = await ask(get(`/main${HONO_ORDERS_PATH}`, bearer(token)))
    expect(answer.status).toBe(403)
    expect(answerField(answer, 'www-authenticate')).toBe(
      'Bearer realm="api", error="insufficient_scope", error_description="insufficient scope", scope="orders:read"',
    )
  })

  it('admits a token with the scope: 200 with c.get(auth) in the route', async () => {
    const token = await issuer.mint({ sub: 'alice', scope: 'openid orders:read' })
    const answer = await ask(get(`/main${HONO_ORDERS_PATH}`, bearer(token)))
    expect(answer.status).toBe(200)
    expect(JSON.parse(answer.body.toString())).toEqual({ subject: 'alice' })
  })

  it('admits a valid token on a route with no guard', async () => {
    const token = await issuer.mint({ sub: 'bob' })
    const answer = await ask(get(`/main${HONO_PROFILE_PATH}`, bearer(token)))
    expect(answer.status).toBe(200)
    expect(JSON.parse(answer.body.toString())).toEqual({ subject: 'bob' })
  })

  it('counts a tenant down to 429 with Retry-After and the RateLimit fields', async () => {
    const token = await issuer.mint({ sub: 'alice', scope: 'orders:read', tenant: 'acme' })
    const answers = []
    for (let request = 0; request < 3; request++) {
      answers.push(await ask(get(`/limited${HONO_ORDERS_PATH}`, bearer(token))))
    }
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 429])
    for (const answer of answers) {
      expect(answerField(answer, 'ratelimit-policy')).toBe('"default";q=2;w=60')
    }
    const refused = answers[2] ?? expect.unreachable()
    expect(answerField(refused, 'retry-after')).toMatch(/^[1-9]\d*$/)
    expect(answerField(refused, 'ratelimit')).toMatch(/^"default";r=0;t=\d+$/)
    expect(JSON.parse(answers[0]?.body.toString() ?? '')).toEqual({
      subject: 'alice',
      tenant: 'acme',
    })
  })
})
