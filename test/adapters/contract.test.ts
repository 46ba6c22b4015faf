import { once } from 'node:events'
import { request as httpRequest, type IncomingMessage, type Server } from 'node:http'
import { type AddressInfo, connect } from 'node:net'

import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GateEvent } from '../../src/events.js'
import type { GateOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS, LOGOUT_PATH, TWO_SCOPES_PATH } from '../helpers/apps.js'
import { NEST_APPS } from '../helpers/nest-apps.js'
import { rawRequest } from '../helpers/raw-request.js'

/** Every adapter, NestJS on both of its platforms included. */
const EVERY_APP = [...APPS, ...NEST_APPS]

const ROUTE = '/api/v1/billing/subscriptions'
let issuer: TestIssuer
let options: GateOptions

beforeAll(async () => {
  issuer = await createTestIssuer({
    realms: ['acme'],
    algorithms: ['RS256', 'ES256'],
    audience: 'gateway',
  })
  options = { issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }), audience: 'gateway' }
})
afterAll(async () => {
  await issuer.close()
})

const INVALID_TOKEN = {
  status: 401,
  challenge: 'Bearer realm="api", error="invalid_token", error_description="invalid token"',
  body: { error: 'invalid_token', error_description: 'invalid token' },
}

describe.each(EVERY_APP)('%s adapter', (_name, createApp) => {
  let app: Server
  beforeAll(() => {
    app = createApp(options)
  })
  afterAll(() => {
    app.close()
  })

  it('admits a valid token and exposes the verified auth to the handler', async () => {
    const token = await issuer.mint({ sub: 'alice', azp: 'billing-ui' })
    const res = await request(app).get(ROUTE).set('Authorization', `Bearer ${token}`)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({
      authenticated: true,
      subject: 'alice',
      clientId: 'billing-ui',
      issuer: issuer.issuer('acme'),
    })
  })

  it('answers 401 with a bare challenge when no credentials are sent', async () => {
    const res = await request(app).get(ROUTE)
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toBe('Bearer realm="api"')
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(res.headers['cache-control']).toBe('no-store')
    expect(res.body).toEqual({ error: 'unauthorized', error_description: 'bearer token required' })
  })

  it('answers 401 with a bare challenge for another scheme', async () => {
    const res = await request(app).get(ROUTE).set('Authorization', 'Basic dXNlcjpwYXNz')
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toBe('Bearer realm="api"')
  })

  it('answers 400 invalid_request for Bearer without a token', async () => {
    const res = await request(app).get(ROUTE).set('Authorization', 'Bearer')
    expect(res.status).toBe(400)
    expect(res.headers['www-authenticate']).toContain('error="invalid_request"')
    expect(res.body.error).toBe('invalid_request')
  })

  it('answers 400 invalid_request for a repeated Authorization field', async () => {
    const token = await issuer.mint()
    const res = await rawRequest(app, [
      `GET ${ROUTE} HTTP/1.1`,
      `Authorization: Bearer ${token}`,
      `Authorization: Bearer ${token}`,
    ])
    expect(res.status).toBe(400)
    expect(res.raw).toContain('error="invalid_request"')
  })

  it('answers 400 invalid_request for a token also sent in the query', async () => {
    const token = await issuer.mint()
    const res = await request(app)
      .get(`${ROUTE}?access_token=${token}`)
      .set('Authorization', `Bearer ${token}`)
    expect(res.status).toBe(400)
  })

  it('answers 400 invalid_request for a token also sent in a form body', async () => {
    const token = await issuer.mint()
    const res = await request(app)
      .post(ROUTE)
      .set('Authorization', `Bearer ${token}`)
      .type('form')
      .send({ access_token: token })
    expect(res.status).toBe(400)
  })

  it.each([
    'application/x-www-form-urlencoded; charset=UTF-8',
    'application/x-www-form-urlencoded;charset=utf-8',
    'Application/X-WWW-Form-URLEncoded',
    'APPLICATION/X-WWW-FORM-URLENCODED; Charset=UTF-8',
  ])(
    'answers 400 invalid_request for a token also sent in a form body typed %j',
    async (contentType) => {
      const token = await issuer.mint()
      const res = await request(app)
        .post(ROUTE)
        .set('Authorization', `Bearer ${token}`)
        .set('Content-Type', contentType)
        .send(new URLSearchParams({ access_token: token }).toString())
      expect(res.status).toBe(400)
      expect(res.headers['www-authenticate']).toContain('error="invalid_request"')
    },
  )

  it('answers 401 token expired for an expired token', async () => {
    const token = await issuer.mint({ exp: Math.floor(Date.now() / 1000) - 60 })
    const res = await request(app).get(ROUTE).set('Authorization', `Bearer ${token}`)
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toBe(
      'Bearer realm="api", error="invalid_token", error_description="token expired"',
    )
    expect(res.body).toEqual({ error: 'invalid_token', error_description: 'token expired' })
  })

  it('refuses a token issued for another product (office token at the gateway)', async () => {
    const token = await issuer.mint({ aud: 'office' })
    const res = await request(app).get(ROUTE).set('Authorization', `Bearer ${token}`)
    expect(res.status).toBe(INVALID_TOKEN.status)
    expect(res.headers['www-authenticate']).toBe(INVALID_TOKEN.challenge)
    expect(res.body).toEqual(INVALID_TOKEN.body)
  })

  it('refuses a forged signature', async () => {
    const token = await issuer.mint()
    const [header, payload] = token.split('.')
    const forged = await issuer.mint({ sub: 'mallory' })
    const res = await request(app)
      .get(ROUTE)
      .set('Authorization', `Bearer ${header}.${payload}.${forged.split('.')[2]}`)
    expect(res.status).toBe(401)
    expect(res.body).toEqual(INVALID_TOKEN.body)
  })

  it('answers 403 insufficient_scope with the scope the route needs', async () => {
    const token = await issuer.mint({ scope: 'openid profile' })
    const res = await request(app).get('/scoped').set('Authorization', `Bearer ${token}`)
    expect(res.status).toBe(403)
    expect(res.headers['www-authenticate']).toBe(
      'Bearer realm="api", error="insufficient_scope", error_description="insufficient scope", scope="billing:read"',
    )
    expect(res.body).toEqual({
      error: 'insufficient_scope',
      error_description: 'insufficient scope',
    })
  })

  it('requires both scopes of a two-scope guard: a token with one of them gets 403', async () => {
    for (const scope of ['billing:read', 'billing:write']) {
      const token = await issuer.mint({ scope: `openid ${scope}` })
      const res = await request(app).get(TWO_SCOPES_PATH).set('Authorization', `Bearer ${token}`)
      expect(res.status, scope).toBe(403)
      expect(res.headers['www-authenticate'], scope).toBe(
        'Bearer realm="api", error="insufficient_scope", error_description="insufficient scope", scope="billing:read billing:write"',
      )
      expect(res.body, scope).toEqual({
        error: 'insufficient_scope',
        error_description: 'insufficient scope',
      })
    }
  })

  it('admits a two-scope route when the token has both scopes', async () => {
    const token = await issuer.mint({ sub: 'both', scope: 'billing:write openid billing:read' })
    const res = await request(app).get(TWO_SCOPES_PATH).set('Authorization', `Bearer ${token}`)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ authenticated: true, subject: 'both' })
  })

  it('admits a route guarded by scope when the token has it', async () => {
    const token = await issuer.mint({ scope: 'openid billing:read' })
    const res = await request(app).get('/scoped').set('Authorization', `Bearer ${token}`)
    expect(res.status).toBe(200)
  })

  it('checks any-of scopes, realm roles and client roles', async () => {
    const admin = await issuer.mint({
      scope: 'billing:admin',
      realm_access: { roles: ['admin'] },
      resource_access: { office: { roles: ['editor'] } },
    })
    const plain = await issuer.mint({ scope: 'openid' })
    for (const path of ['/any-scope', '/realm-role', '/client-role']) {
      expect((await request(app).get(path).set('Authorization', `Bearer ${admin}`)).status).toBe(
        200,
      )
      expect((await request(app).get(path).set('Authorization', `Bearer ${plain}`)).status).toBe(
        403,
      )
    }
  })

  it('does not turn a failure in a later handler into an authentication error', async () => {
    const token = await issuer.mint()
    // First use, then a cached verdict: the second is decided without any await before next().
    for (const use of ['first', 'cached']) {
      const res = await request(app).get('/throws').set('Authorization', `Bearer ${token}`)
      expect(res.status, use).toBe(500)
      expect(res.headers['www-authenticate'], use).toBeUndefined()
    }
  })
})

describe.each(EVERY_APP)('%s adapter, configured', (_name, createApp) => {
  it('hands refusals to the framework with errorHandling: framework', async () => {
    const app = createApp({ ...options, errorHandling: 'framework' })
    const res = await request(app).get(ROUTE)
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toBe('Bearer realm="api"')
    expect(res.body).toEqual({ handledBy: 'app', code: 'ERR_TOKEN_MISSING' })
    app.close()
  })

  it('hands guard refusals to the framework too with errorHandling: framework', async () => {
    const app = createApp({ ...options, errorHandling: 'framework' })
    const token = await issuer.mint({ scope: 'openid' })
    const res = await request(app).get('/scoped').set('Authorization', `Bearer ${token}`)
    expect(res.status).toBe(403)
    expect(res.body).toEqual({ handledBy: 'app', code: 'ERR_INSUFFICIENT_SCOPE' })
    app.close()
  })

  it('lets requests without credentials through when credentials are optional, but not bad tokens', async () => {
    const app = createApp({ ...options, credentialsRequired: false })
    expect((await request(app).get(ROUTE)).body).toEqual({ authenticated: false })
    const bad = await request(app).get(ROUTE).set('Authorization', 'Bearer not.a.token')
    expect(bad.status).toBe(401)
    const guarded = await request(app).get('/scoped')
    expect(guarded.status).toBe(401)
    // The guard refused: its challenge names the scopes it requires (RFC 6750 §3).
    expect(guarded.headers['www-authenticate']).toBe('Bearer realm="api", scope="billing:read"')
    app.close()
  })

  it('leaves requests the skip predicate matches to the route: its own answer, no auth, no point spent', async () => {
    const app = createApp({
      ...options,
      tenant: { claim: 'tenant' },
      rateLimit: { windows: [{ points: 5, durationSeconds: 60 }] },
      skip: (req) => req.method === 'OPTIONS',
    })
    // A valid token on the skipped requests: they would be admitted and charged if not skipped.
    const token = await issuer.mint({ tenant: 'preflighted' })
    for (let attempt = 0; attempt < 3; attempt++) {
      const skipped = await request(app).options(ROUTE).set('Authorization', `Bearer ${token}`)
      expect(skipped.status).toBe(200)
      expect(skipped.body).toEqual({ preflight: true, authenticated: false })
      expect(skipped.headers['ratelimit']).toBeUndefined()
      expect(skipped.headers['www-authenticate']).toBeUndefined()
    }
    const counted = await request(app).get(ROUTE).set('Authorization', `Bearer ${token}`)
    expect(counted.status).toBe(200)
    // Five points, and this request is the first to spend one.
    expect(counted.headers['ratelimit']).toMatch(/;r=4;/)
    expect((await request(app).get(ROUTE)).status).toBe(401)
    app.close()
  })

  it('uses the configured realm in every challenge', async () => {
    const app = createApp({ ...options, realm: 'gateway' })
    expect((await request(app).get(ROUTE)).headers['www-authenticate']).toBe(
      'Bearer realm="gateway"',
    )
    app.close()
  })

  it('answers 503 with Retry-After, not 401, when no signing keys can be fetched', async () => {
    const down = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
    const token = await down.mint()
    await down.stop()
    const app = createApp({
      issuers: keycloak({ authUrl: down.url, realms: ['acme'] }),
      audience: 'gateway',
    })
    const res = await request(app).get(ROUTE).set('Authorization', `Bearer ${token}`)
    expect(res.status).toBe(503)
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    expect(res.headers['www-authenticate']).toBeUndefined()
    expect(res.body).toEqual({
      error: 'temporarily_unavailable',
      error_description: 'signing keys unavailable',
    })
    app.close()
    await down.close()
  })

  it('answers an anonymous request to a guarded route as its gate would (realm, error handling)', async () => {
    const app = createApp({
      ...options,
      realm: 'shop',
      errorHandling: 'framework',
      credentialsRequired: false,
    })
    const res = await request(app).get('/scoped')
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toBe('Bearer realm="shop", scope="billing:read"')
    expect(res.body).toEqual({ handledBy: 'app', code: 'ERR_TOKEN_MISSING' })
    app.close()
  })

  it('challenges guard refusals with the realm of its gate', async () => {
    const app = createApp({ ...options, realm: 'shop' })
    const token = await issuer.mint({ scope: 'openid' })
    const res = await request(app).get('/scoped').set('Authorization', `Bearer ${token}`)
    expect(res.status).toBe(403)
    expect(res.headers['www-authenticate']).toBe(
      'Bearer realm="shop", error="insufficient_scope", error_description="insufficient scope", scope="billing:read"',
    )
    app.close()
  })

  it('refuses a token signed by a key the provider dropped from the next request after gate.refresh()', async () => {
    const own = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
    const app = createApp({
      issuers: keycloak({ authUrl: own.url, realms: ['acme'] }),
      audience: 'gateway',
    })
    const compromised = await own.mint()
    const compromisedKid = JSON.parse(
      Buffer.from(compromised.split('.')[0] as string, 'base64url').toString(),
    ).kid as string
    const bearer = `Bearer ${compromised}`
    expect((await request(app).get(ROUTE).set('Authorization', bearer)).status).toBe(200)
    await own.rotate({ keepPrevious: false })
    own.unpublish(compromisedKid)
    // Cached verdict and fresh keys within the cooldown: still admitted until the operator acts.
    expect((await request(app).get(ROUTE).set('Authorization', bearer)).status).toBe(200)
    const report = await app.gate.refresh()
    expect(report).toMatchObject({ ready: true, issuers: [{ state: 'fresh' }] })
    const refused = await request(app).get(ROUTE).set('Authorization', bearer)
    expect(refused.status).toBe(401)
    expect(refused.body).toEqual(INVALID_TOKEN.body)
    const fresh = await own.mint()
    expect((await request(app).get(ROUTE).set('Authorization', `Bearer ${fresh}`)).status).toBe(200)
    app.close()
    await app.gate.close()
    await own.close()
  })

  it('reports why a token was refused to the operator, with the request line, never to the client', async () => {
    const events: GateEvent[] = []
    const app = createApp({ ...options, onEvent: (event) => events.push(event) })
    const token = await issuer.mint({ aud: 'account' })
    const res = await request(app)
      .get(`${ROUTE}?page=2`)
      .set('Authorization', `Bearer ${token}`)
      .set('X-Request-Id', 'req-42')
    expect(res.status).toBe(401)
    expect(res.body).toEqual(INVALID_TOKEN.body)
    expect(res.text).not.toContain('account')
    expect(events.filter((event) => event.type === 'rejected')).toEqual([
      expect.objectContaining({
        code: 'ERR_TOKEN_INVALID',
        reason: 'audience',
        detail: { aud: 'account', expected: ['gateway'] },
        status: 401,
        method: 'GET',
        path: ROUTE,
        requestId: 'req-42',
      }),
    ])
    app.close()
  })

  it('fails at creation, not per request, on invalid options', () => {
    expect(() => createApp({ ...options, algorithms: ['HS256' as never] })).toThrow(TypeError)
  })
})

describe.each(EVERY_APP)('%s adapter, with rate limits', (_name, createApp) => {
  let app: Server
  beforeAll(() => {
    app = createApp({
      ...options,
      tenant: { claim: 'tenant' },
      rateLimit: { windows: [{ points: 5, durationSeconds: 60 }] },
    })
  })
  afterAll(() => {
    app.close()
  })

  it('keeps the rate-limit fields of the admission on a guard refusal (403)', async () => {
    const token = await issuer.mint({ tenant: 'guarded', scope: 'openid' })
    for (const remaining of [4, 3]) {
      const res = await request(app).get('/scoped').set('Authorization', `Bearer ${token}`)
      expect(res.status).toBe(403)
      expect(res.headers['www-authenticate']).toContain('scope="billing:read"')
      expect(res.headers['ratelimit-policy']).toBe('"default";q=5;w=60')
      expect(res.headers['ratelimit']).toMatch(new RegExp(`^"default";r=${remaining};t=\\d+$`))
    }
  })

  it('sends no rate-limit fields with an anonymous request’s 401 on a guarded route', async () => {
    const res = await request(app).get('/scoped')
    expect(res.status).toBe(401)
    expect(res.headers['ratelimit']).toBeUndefined()
    expect(res.headers['ratelimit-policy']).toBeUndefined()
  })
})

describe.each(EVERY_APP)('%s adapter, provider callbacks', (name, createApp) => {
  let app: Server
  let port: number
  beforeAll(async () => {
    app = createApp({ ...options, revocation: { callbacks: { clientIds: 'gateway' } } })
    await new Promise<void>((done) => app.listen(0, '127.0.0.1', done))
    port = (app.address() as AddressInfo).port
  })
  afterAll(() => {
    app.close()
  })

  /** POSTs a form body in pieces of `piece` bytes, each its own write; the status. */
  async function postInPieces(path: string, body: string, piece: number): Promise<number> {
    const socket = connect(port, '127.0.0.1')
    socket.setNoDelay(true)
    let raw = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => {
      raw += chunk
    })
    const closed = once(socket, 'close')
    const write = (text: string) =>
      new Promise<void>((done, fail) =>
        socket.write(text, (error) => (error ? fail(error) : done())),
      )
    await write(
      [
        `POST ${path} HTTP/1.1`,
        'Host: 127.0.0.1',
        'Content-Type: application/x-www-form-urlencoded',
        `Content-Length: ${Buffer.byteLength(body)}`,
        'Connection: close',
        '',
        '',
      ].join('\r\n'),
    )
    for (let start = 0; start < body.length; start += piece) {
      await write(body.slice(start, start + piece))
      await new Promise((done) => setImmediate(done))
    }
    await closed
    return Number(raw.slice(9, 12))
  }

  it('answers 200 to a back-channel logout whose body arrives in several pieces', async () => {
    const token = await issuer.mintLogoutToken({ sid: `pieces-${name}` })
    const session = await issuer.mint({
      sid: `pieces-${name}`,
      iat: Math.floor(Date.now() / 1000) - 10,
    })
    expect(await postInPieces(LOGOUT_PATH, `logout_token=${token}`, 100)).toBe(200)
    const res = await request(app).get(ROUTE).set('Authorization', `Bearer ${session}`)
    expect(res.status).toBe(401)
  })

  it('answers 200 to a back-channel logout posted to its URL with a query string', async () => {
    const token = await issuer.mintLogoutToken({ sid: `query-${name}` })
    const res = await request(app)
      .post(`${LOGOUT_PATH}?tenant=acme&x=1`)
      .type('form')
      .send({ logout_token: token })
    expect(res.status).toBe(200)
    expect(res.headers['cache-control']).toBe('no-store')
  })
})

describe('all adapters', () => {
  it('give identical status, tollgate headers and body for the same request', async () => {
    const valid = await issuer.mint({ sub: 'same' })
    const expired = await issuer.mint({ exp: 1 })
    const oneScope = await issuer.mint({ scope: 'billing:read' })
    const cases: Array<readonly [string, Record<string, string>]> = [
      [ROUTE, {}],
      [ROUTE, { Authorization: `Bearer ${valid}` }],
      [ROUTE, { Authorization: `Bearer ${expired}` }],
      [ROUTE, { Authorization: 'Bearer' }],
      [ROUTE, { Authorization: 'Basic x' }],
      [ROUTE, { Authorization: 'Bearer a.b.c' }],
      [ROUTE, { Authorization: `Bearer ${valid} x` }],
      [TWO_SCOPES_PATH, { Authorization: `Bearer ${oneScope}` }],
      // An anonymous request to a guarded route is not here: the gate's middleware in front of the
      // route refuses it before the route's guard is known (no scope to name), where withAuth() and
      // Nest's guard know the route. test/adapters/challenge-scope.test.ts compares guards alone.
    ]
    const servers = EVERY_APP.map(([, createApp]) => createApp(options))
    for (const [path, headers] of cases) {
      const answers = []
      for (const server of servers) {
        const res = await request(server).get(path).set(headers)
        answers.push({
          status: res.status,
          challenge: res.headers['www-authenticate'],
          retryAfter: res.headers['retry-after'],
          contentType: res.headers['content-type'],
          cacheControl: res.headers['cache-control'],
          contentLength: res.headers['content-length'],
          body: res.text,
        })
      }
      for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0])
    }
    for (const server of servers) server.close()
  })
})

/** What an answer is made of, for comparing adapters: status, the gate's fields, the body's bytes. */
interface Answer {
  readonly status: number
  readonly challenge: string | undefined
  readonly contentType: string | undefined
  readonly cacheControl: string | undefined
  readonly body: string
}

/** Sends `method` with a form body (supertest drops a GET's and HEAD's), exactly as written. */
async function sendForm(
  server: Server,
  method: 'GET' | 'HEAD' | 'POST',
  headers: Record<string, string>,
  form: string,
): Promise<Answer> {
  if (!server.listening) await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  const { port } = server.address() as AddressInfo
  const outgoing = httpRequest({
    host: '127.0.0.1',
    port,
    method,
    path: ROUTE,
    agent: false,
    headers: {
      ...headers,
      'Content-Type': 'application/x-www-form-urlencoded',
      'Content-Length': String(Buffer.byteLength(form)),
    },
  })
  outgoing.end(form)
  const [response] = (await once(outgoing, 'response')) as [IncomingMessage]
  const chunks: Buffer[] = []
  for await (const chunk of response) chunks.push(chunk as Buffer)
  return {
    status: response.statusCode ?? 0,
    challenge: response.headers['www-authenticate'],
    contentType: response.headers['content-type'],
    cacheControl: response.headers['cache-control'],
    body: Buffer.concat(chunks).toString(),
  }
}

// RFC 6750 §2.2: the form body method MUST NOT be used with GET (nor HEAD, whose body has no
// defined semantics either), and Fastify's and the Fetch hosts' never hand such a body over. On
// GET and HEAD the body is not a credential channel: the header alone decides, on every adapter.
describe('all adapters, a form body access_token by method', () => {
  let servers: Server[]
  beforeAll(() => {
    servers = EVERY_APP.map(([, createApp]) => createApp(options))
  })
  afterAll(() => {
    for (const server of servers) server.close()
  })

  /** Every adapter's answer to one request, asserted identical; the common answer. */
  async function sameAnswer(
    method: 'GET' | 'HEAD' | 'POST',
    headers: Record<string, string>,
    form: string,
  ): Promise<Answer> {
    const answers: Answer[] = []
    for (const server of servers) answers.push(await sendForm(server, method, headers, form))
    const first = answers[0] as Answer
    // By adapter name, so that a difference names the adapter that answered otherwise.
    expect(Object.fromEntries(EVERY_APP.map(([name], index) => [name, answers[index]]))).toEqual(
      Object.fromEntries(EVERY_APP.map(([name]) => [name, first])),
    )
    return first
  }

  it('admits a GET on its header token and ignores a token in its form body', async () => {
    const header = await issuer.mint({ sub: 'header-holder' })
    const inBody = await issuer.mint({ sub: 'body-holder' })
    const answer = await sameAnswer(
      'GET',
      { Authorization: `Bearer ${header}` },
      `access_token=${inBody}`,
    )
    expect(answer.status).toBe(200)
    expect(JSON.parse(answer.body)).toMatchObject({ authenticated: true, subject: 'header-holder' })
  })

  it('refuses a GET whose header token is invalid even when its form body holds a valid one', async () => {
    const valid = await issuer.mint()
    const answer = await sameAnswer(
      'GET',
      { Authorization: 'Bearer a.b.c' },
      `access_token=${valid}`,
    )
    expect(answer).toEqual({
      status: INVALID_TOKEN.status,
      challenge: INVALID_TOKEN.challenge,
      contentType: 'application/json; charset=utf-8',
      cacheControl: 'no-store',
      body: JSON.stringify(INVALID_TOKEN.body),
    })
  })

  it('answers a GET with a token only in its form body 401 with a bare challenge: the body is no credential', async () => {
    const answer = await sameAnswer('GET', {}, `access_token=${await issuer.mint()}`)
    expect(answer).toEqual({
      status: 401,
      challenge: 'Bearer realm="api"',
      contentType: 'application/json; charset=utf-8',
      cacheControl: 'no-store',
      body: '{"error":"unauthorized","error_description":"bearer token required"}',
    })
  })

  it('decides a HEAD on its header token alone, with or without a token in its form body', async () => {
    const valid = await issuer.mint()
    const invalid = await sameAnswer(
      'HEAD',
      { Authorization: 'Bearer a.b.c' },
      `access_token=${valid}`,
    )
    expect(invalid).toMatchObject({ status: 401, challenge: INVALID_TOKEN.challenge, body: '' })
    const bodyOnly = await sameAnswer('HEAD', {}, `access_token=${valid}`)
    expect(bodyOnly).toMatchObject({ status: 401, challenge: 'Bearer realm="api"', body: '' })
  })

  it('refuses a POST with a token in its header and its form body 400 invalid_request', async () => {
    const token = await issuer.mint()
    const answer = await sameAnswer(
      'POST',
      { Authorization: `Bearer ${token}` },
      `access_token=${token}`,
    )
    expect(answer).toEqual({
      status: 400,
      challenge:
        'Bearer realm="api", error="invalid_request", error_description="access token sent more than one way"',
      contentType: 'application/json; charset=utf-8',
      cacheControl: 'no-store',
      body: '{"error":"invalid_request","error_description":"access token sent more than one way"}',
    })
  })

  it('answers a POST with a token only in its form body 401 with a bare challenge', async () => {
    const answer = await sameAnswer('POST', {}, `access_token=${await issuer.mint()}`)
    expect(answer).toMatchObject({ status: 401, challenge: 'Bearer realm="api"' })
  })
})

describe('Koa middleware called directly, outside koa-compose', () => {
  it('returns a promise whatever the outcome, rejected with the refusal in framework mode', async () => {
    const { IncomingMessage, ServerResponse } = await import('node:http')
    const { Socket } = await import('node:net')
    const Koa = (await import('koa')).default
    const { tollgate } = await import('../../adapters/koa/index.js')
    const app = new Koa()
    const contextFor = (headers: Record<string, string>) => {
      const req = new IncomingMessage(new Socket())
      req.method = 'GET'
      req.url = ROUTE
      req.headers = headers
      return app.createContext(req, new ServerResponse(req))
    }
    const next = async () => {}
    const respond = tollgate(options)
    const framework = tollgate({ ...options, errorHandling: 'framework' })
    const missing = contextFor({})
    await expect(respond(missing, next)).resolves.toBeUndefined()
    expect(missing.status).toBe(401)
    await expect(framework(contextFor({}), next)).rejects.toMatchObject({
      code: 'ERR_TOKEN_MISSING',
    })
    await expect(respond.requireScopes('billing:read')(contextFor({}), next)).resolves.toBe(
      undefined,
    )
    await expect(
      framework.requireScopes('billing:read')(contextFor({}), next),
    ).rejects.toMatchObject({ code: 'ERR_TOKEN_MISSING' })
    const token = await issuer.mint()
    const admitted = contextFor({ authorization: `Bearer ${token}` })
    await expect(respond(admitted, next)).resolves.toBeUndefined()
    expect(admitted.state.auth?.token).toBe(token)
    await respond.gate.close()
    await framework.gate.close()
  })
})
