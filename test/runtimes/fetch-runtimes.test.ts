import type { AddressInfo } from 'node:net'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GateOptions } from '../../src/gate/options.js'
import { createTestIssuer, TEST_ALGORITHMS, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS, type ProtectedServer } from '../helpers/apps.js'
import {
  exchange,
  type RawAnswer,
  RUNTIMES,
  type RuntimeName,
  type RuntimeServer,
  runtimeBundles,
  startRuntime,
} from '../helpers/runtimes.js'
import type { RuntimeAppConfig, RuntimeGateConfig } from './app.js'

const ROUTE = '/api/v1/billing/subscriptions'
const LIMITED = {
  tenant: { claim: 'tenant' },
  rateLimit: { windows: [{ points: 2, durationSeconds: 60 }] },
} as const

// Fields a host sets on its own (transport, its name, the time): everything else must match.
const HOST_FIELDS = new Set([
  'date',
  'connection',
  'keep-alive',
  'content-length',
  'transfer-encoding',
  'server',
])

/**
 * The answer with the host's own fields dropped and names sorted. The seconds of `t=` in
 * RateLimit and of Retry-After count from each server's own state (its first request, its last
 * attempt to fetch keys), so they are checked to be whole seconds and then compared as `<s>`: the
 * two servers are asked at different instants and no test may depend on how fast the machine is.
 */
function normalized(answer: RawAnswer) {
  const headers = answer.headers
    .filter(([name]) => !HOST_FIELDS.has(name))
    .map(([name, value]): [string, string] => {
      if (name === 'retry-after') {
        expect(value).toMatch(/^[1-9]\d*$/)
        return [name, '<s>']
      }
      if (name === 'ratelimit') {
        expect(value).toMatch(/;t=\d+$/)
        return [name, value.replace(/;t=\d+$/, ';t=<s>')]
      }
      return [name, value]
    })
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return { status: answer.status, headers, body: answer.body.toString('latin1') }
}

function header(answer: RawAnswer, name: string): string | undefined {
  return answer.headers.find(([field]) => field === name)?.[1]
}

let issuer: TestIssuer
let down: TestIssuer
let downToken: string
let bundles: Awaited<ReturnType<typeof runtimeBundles>>
let gates: Record<'main' | 'limited' | 'down', RuntimeGateConfig>

beforeAll(async () => {
  issuer = await createTestIssuer({
    realms: ['acme'],
    algorithms: TEST_ALGORITHMS,
    audience: 'gateway',
  })
  // An issuer that is gone before any gate asks it for keys: the JWKS is unreachable.
  down = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  downToken = await down.mint()
  await down.stop()
  bundles = await runtimeBundles()
  gates = {
    main: {
      authUrl: issuer.url,
      realms: ['acme'],
      audience: 'gateway',
      options: { algorithms: TEST_ALGORITHMS },
    },
    limited: { authUrl: issuer.url, realms: ['acme'], audience: 'gateway', options: LIMITED },
    down: { authUrl: down.url, realms: ['acme'], audience: 'gateway' },
  }
})
afterAll(async () => {
  bundles?.remove()
  await issuer?.close()
  await down?.close()
})

const createFetchApp = APPS.find(([name]) => name === 'fetch')?.[1] as (
  options: GateOptions,
) => ProtectedServer

async function listen(server: ProtectedServer): Promise<number> {
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  return (server.address() as AddressInfo).port
}

/** One request of the table: the gate it goes to, its request lines, what it must get. */
interface Case {
  readonly name: string
  readonly gate: keyof typeof gates
  readonly lines: () => Promise<string[]>
  /** The body after the fields, from the request lines (the token they carry). */
  readonly body?: (lines: readonly string[]) => Promise<string>
  readonly status: number
  readonly check?: (answer: RawAnswer) => void
}

const get = (path: string, ...fields: string[]) => [`GET ${path} HTTP/1.1`, ...fields]
const bearer = (token: string) => `Authorization: Bearer ${token}`

const CASES: readonly Case[] = [
  {
    name: 'no token: 401 with a bare challenge',
    gate: 'main',
    lines: async () => get(ROUTE),
    status: 401,
    check: (answer) => expect(header(answer, 'www-authenticate')).toBe('Bearer realm="api"'),
  },
  {
    name: 'another scheme: 401 with a bare challenge',
    gate: 'main',
    lines: async () => get(ROUTE, 'Authorization: Basic dXNlcjpwYXNz'),
    status: 401,
  },
  {
    name: 'a valid RS256 token: 200 with the route answer',
    gate: 'main',
    lines: async () => get(ROUTE, bearer(await issuer.mint({ sub: 'alice', azp: 'billing-ui' }))),
    status: 200,
    check: (answer) =>
      expect(JSON.parse(answer.body.toString())).toMatchObject({
        authenticated: true,
        subject: 'alice',
      }),
  },
  {
    name: 'an expired token: 401 token expired',
    gate: 'main',
    lines: async () =>
      get(ROUTE, bearer(await issuer.mint({ exp: Math.floor(Date.now() / 1000) - 60 }))),
    status: 401,
    check: (answer) =>
      expect(header(answer, 'www-authenticate')).toBe(
        'Bearer realm="api", error="invalid_token", error_description="token expired"',
      ),
  },
  {
    name: 'a token for another audience: 401 invalid_token',
    gate: 'main',
    lines: async () => get(ROUTE, bearer(await issuer.mint({ aud: 'office' }))),
    status: 401,
  },
  {
    name: 'a forged signature: 401 invalid_token',
    gate: 'main',
    lines: async () => {
      const [head, payload] = (await issuer.mint()).split('.')
      const signature = (await issuer.mint({ sub: 'mallory' })).split('.')[2]
      return get(ROUTE, bearer(`${head}.${payload}.${signature}`))
    },
    status: 401,
    check: (answer) =>
      expect(answer.body.toString()).toBe(
        '{"error":"invalid_token","error_description":"invalid token"}',
      ),
  },
  {
    name: 'Bearer without a token: 400 invalid_request',
    gate: 'main',
    lines: async () => get(ROUTE, 'Authorization: Bearer'),
    status: 400,
  },
  {
    name: 'two tokens in one field: 400 invalid_request',
    gate: 'main',
    lines: async () => {
      const token = await issuer.mint()
      return get(ROUTE, `Authorization: Bearer ${token} ${token}`)
    },
    status: 400,
  },
  {
    name: 'a repeated Authorization field: 400 invalid_request',
    gate: 'main',
    lines: async () => {
      const token = await issuer.mint()
      return get(ROUTE, bearer(token), bearer(token))
    },
    status: 400,
    check: (answer) =>
      expect(header(answer, 'www-authenticate')).toContain('error="invalid_request"'),
  },
  {
    name: 'a token also in the query: 400 invalid_request',
    gate: 'main',
    lines: async () => {
      const token = await issuer.mint()
      return get(`${ROUTE}?access_token=${token}`, bearer(token))
    },
    status: 400,
  },
  {
    name: 'a token also in a form body: 400 invalid_request',
    gate: 'main',
    lines: async () => {
      const token = await issuer.mint()
      return [
        `POST ${ROUTE} HTTP/1.1`,
        bearer(token),
        'Content-Type: application/x-www-form-urlencoded',
        `Content-Length: ${`access_token=${token}`.length}`,
      ]
    },
    body: async (lines) =>
      `access_token=${(lines[1] as string).slice('Authorization: Bearer '.length)}`,
    status: 400,
  },
  {
    name: 'a token without the scope the route needs: 403 insufficient_scope',
    gate: 'main',
    lines: async () => get('/scoped', bearer(await issuer.mint({ scope: 'openid profile' }))),
    status: 403,
    check: (answer) =>
      expect(header(answer, 'www-authenticate')).toBe(
        'Bearer realm="api", error="insufficient_scope", error_description="insufficient scope", scope="billing:read"',
      ),
  },
  {
    name: 'a token with the scope the route needs: 200',
    gate: 'main',
    lines: async () => get('/scoped', bearer(await issuer.mint({ scope: 'openid billing:read' }))),
    status: 200,
  },
  {
    name: 'a failure in the handler after admission: 500, no challenge',
    gate: 'main',
    lines: async () => get('/throws', bearer(await issuer.mint())),
    status: 500,
    check: (answer) => expect(header(answer, 'www-authenticate')).toBeUndefined(),
  },
  {
    name: 'signing keys unreachable: 503 with Retry-After, never 401',
    gate: 'down',
    lines: async () => get(ROUTE, bearer(downToken)),
    status: 503,
    check: (answer) => {
      expect(header(answer, 'www-authenticate')).toBeUndefined()
      expect(answer.body.toString()).toBe(
        '{"error":"temporarily_unavailable","error_description":"signing keys unavailable"}',
      )
    },
  },
]

/**
 * The algorithms a runtime's `node:crypto` cannot verify with, as docs/runtimes.md lists them:
 * workerd's `verify()` refuses a KeyObject inside an options object (`{ key, dsaEncoding }` for
 * ECDSA's r||s signatures, `{ key, padding, saltLength }` for RSA-PSS), so those tokens get the
 * 401 of any signature that does not verify.
 */
const REFUSED_ALGORITHMS: Readonly<Record<RuntimeName, readonly string[]>> = {
  bun: [],
  deno: [],
  workerd: ['PS256', 'PS384', 'PS512'],
  'workerd 2024-09-23': ['PS256', 'PS384', 'PS512'],
}

describe.each(RUNTIMES)('the Fetch adapter on %s', (runtime) => {
  let server: RuntimeServer
  let runtimePort: number
  const reference: Partial<Record<keyof typeof gates, ProtectedServer>> = {}
  const referencePorts: Partial<Record<keyof typeof gates, number>> = {}

  beforeAll(async () => {
    const config: RuntimeAppConfig = { gates }
    server = await startRuntime(runtime, bundles.directory, config)
    runtimePort = server.port
    for (const [name, gate] of Object.entries(gates) as [keyof typeof gates, RuntimeGateConfig][]) {
      const app = createFetchApp({
        ...gate.options,
        issuers: keycloak({ authUrl: gate.authUrl, realms: [...gate.realms] }),
        audience: gate.audience,
      })
      reference[name] = app
      referencePorts[name] = await listen(app)
    }
  })
  afterAll(async () => {
    await server?.stop()
    for (const app of Object.values(reference)) {
      app.close()
      await app.gate.close()
    }
  })

  /** The same request lines to the runtime (under `/<gate>`) and to Node's `fetch` app. */
  async function both(gate: keyof typeof gates, lines: string[], body = '') {
    const [requestLine = '', ...fields] = lines
    const prefixed = requestLine.replace(' /', ` /${gate}/`)
    const onRuntime = await exchange(runtimePort, [prefixed, ...fields], body)
    const onNode = await exchange(referencePorts[gate] as number, lines, body)
    return { onRuntime, onNode }
  }

  it.each(CASES)('$name: the same status, fields and body as on Node', async (c) => {
    const lines = await c.lines()
    const { onRuntime, onNode } = await both(c.gate, lines, await c.body?.(lines))
    expect(onNode.status).toBe(c.status)
    expect(normalized(onRuntime), server.output()).toEqual(normalized(onNode))
    c.check?.(onRuntime)
  })

  const verified = TEST_ALGORITHMS.filter((alg) => !REFUSED_ALGORITHMS[runtime].includes(alg))
  const refused = TEST_ALGORITHMS.filter((alg) => REFUSED_ALGORITHMS[runtime].includes(alg))

  it.each(verified)('admits a valid %s token with the same answer as on Node', async (alg) => {
    const token = await issuer.mint({ sub: alg }, { alg })
    const { onRuntime, onNode } = await both('main', get(ROUTE, bearer(token)))
    expect(onNode.status).toBe(200)
    expect(normalized(onRuntime), server.output()).toEqual(normalized(onNode))
  })

  if (refused.length > 0) {
    it(`refuses valid ${refused.join(', ')} tokens with 401 invalid_token (docs/runtimes.md)`, async () => {
      for (const alg of refused) {
        const token = await issuer.mint({ sub: alg }, { alg })
        const { onRuntime, onNode } = await both('main', get(ROUTE, bearer(token)))
        expect(onNode.status, alg).toBe(200)
        expect(onRuntime.status, alg).toBe(401)
        expect(onRuntime.body.toString(), alg).toBe(
          '{"error":"invalid_token","error_description":"invalid token"}',
        )
      }
    })
  }

  it('counts a tenant down to 429 with Retry-After and RateLimit fields, as on Node', async () => {
    const token = await issuer.mint({ tenant: `tenant-on-${runtime.replaceAll(' ', '-')}` })
    const statuses: number[] = []
    for (let request = 0; request < 3; request++) {
      const { onRuntime, onNode } = await both('limited', get(ROUTE, bearer(token)))
      expect(normalized(onRuntime), server.output()).toEqual(normalized(onNode))
      expect(header(onRuntime, 'ratelimit-policy')).toBe('"default";q=2;w=60')
      statuses.push(onRuntime.status)
    }
    expect(statuses).toEqual([200, 200, 429])
  })
})
