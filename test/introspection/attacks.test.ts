/**
 * Attacks on introspection, against a provider whose answers the test writes (a loopback server
 * with its own keys): forged and misdirected RFC 9701 JWT responses, `active` that is not a
 * boolean, answers for another audience, issuer or token type, sender-constrained tokens, and
 * endpoints over plain http or redirecting elsewhere. A token is admitted only on an authentic,
 * well-formed answer that passes the gate's checks; an answer that cannot be trusted is a 503.
 */
import { generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

import { SignJWT } from 'jose'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { GateEvent } from '../../src/events.js'
import { createGate, type GateOptions } from '../../src/index.js'
import type { IntrospectionOptions } from '../../src/introspection/options.js'
import { createDpopKey } from '../../src/testing/index.js'

interface Answer {
  readonly status?: number
  readonly contentType?: string
  readonly body: string
  readonly headers?: Readonly<Record<string, string>>
}

const providerKey = generateKeyPairSync('rsa', { modulusLength: 2048 })
const attackerKey = generateKeyPairSync('rsa', { modulusLength: 2048 })
let server: Server
let url = ''
let answer: (form: URLSearchParams) => Answer = () => ({ body: '{"active":false}' })
let calls = 0
let discoveryEndpoint = ''

function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  return new Promise((resolve) => {
    let body = ''
    req.on('data', (chunk) => {
      body += String(chunk)
    })
    req.on('end', () => resolve(new URLSearchParams(body)))
  })
}

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/jwks') {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(
        JSON.stringify({
          keys: [{ ...providerKey.publicKey.export({ format: 'jwk' }), kid: 'k1', use: 'sig' }],
        }),
      )
      return
    }
    if (req.url === '/.well-known/openid-configuration') {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(
        JSON.stringify({
          issuer: url,
          jwks_uri: `${url}/jwks`,
          introspection_endpoint: discoveryEndpoint,
        }),
      )
      return
    }
    calls++
    void readForm(req).then((form) => {
      const { status = 200, contentType = 'application/json', body, headers = {} } = answer(form)
      res.writeHead(status, { 'content-type': contentType, ...headers })
      res.end(body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})
beforeEach(() => {
  calls = 0
})

const nowSeconds = () => Math.floor(Date.now() / 1000)
const activeFacts = (extra: Record<string, unknown> = {}) => ({
  active: true,
  iss: url,
  aud: 'orders',
  client_id: 'shop',
  scope: 'orders:read',
  exp: nowSeconds() + 120,
  iat: nowSeconds(),
  ...extra,
})
const json = (value: unknown): Answer => ({ body: JSON.stringify(value) })

/** An RFC 9701 response: `token_introspection` in a JWT signed by `key`. */
async function signedAnswer(
  facts: Record<string, unknown>,
  options: { key?: KeyObject; aud?: string; iss?: string; typ?: string; kid?: string } = {},
): Promise<Answer> {
  const jwt = await new SignJWT({ token_introspection: facts })
    .setProtectedHeader({
      alg: 'RS256',
      kid: options.kid ?? 'k1',
      typ: options.typ ?? 'token-introspection+jwt',
    })
    .setIssuer(options.iss ?? url)
    .setAudience(options.aud ?? 'orders-api')
    .setIssuedAt()
    .sign(options.key ?? providerKey.privateKey)
  return { contentType: 'application/token-introspection+jwt', body: jwt }
}

function gateWith(
  introspection: Partial<IntrospectionOptions> = {},
  extra: Partial<GateOptions> = {},
) {
  const events: GateEvent[] = []
  const gate = createGate({
    issuers: [
      {
        issuer: url,
        jwksUri: `${url}/jwks`,
        introspection: {
          endpoint: `${url}/introspect`,
          clientId: 'orders-api',
          clientSecret: 'orders-secret',
          ...introspection,
        },
      },
    ],
    audience: 'orders',
    onEvent: (event) => events.push(event),
    ...extra,
  })
  return { gate, events }
}

const opaque = () => randomBytes(24).toString('base64url')
const check = (gate: ReturnType<typeof createGate>, token: string) =>
  gate.check({ headers: { authorization: `Bearer ${token}` } })
const failure = (events: GateEvent[]) => events.find((e) => e.type === 'introspection_failed')

describe('the request the gate sends', () => {
  it('posts the token with token_type_hint=access_token, authenticated as the gate client', async () => {
    let seen: URLSearchParams | undefined
    answer = (form) => {
      seen = form
      return json(activeFacts())
    }
    const { gate } = gateWith()
    const token = opaque()
    await check(gate, token)
    expect(seen?.get('token')).toBe(token)
    expect(seen?.get('token_type_hint')).toBe('access_token')
  })
})

describe('RFC 9701 JWT responses (jwtResponse: true)', () => {
  it('admits a token on a response signed by the issuer key (the control case)', async () => {
    const signed = await signedAnswer(activeFacts())
    answer = () => signed
    const { gate } = gateWith({ jwtResponse: true })
    await expect(check(gate, opaque())).resolves.toMatchObject({ auth: { clientId: 'shop' } })
  })

  it('refuses a forged response: active, signed by another key under the issuer kid (503)', async () => {
    const forged = await signedAnswer(activeFacts(), { key: attackerKey.privateKey })
    answer = () => forged
    const { gate, events } = gateWith({ jwtResponse: true })
    await expect(check(gate, opaque())).rejects.toMatchObject({ status: 503 })
    expect(failure(events)).toMatchObject({ reason: 'signature' })
  })

  it('refuses an unsigned response (alg none)', async () => {
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'token-introspection+jwt' }))
    const payload = Buffer.from(
      JSON.stringify({
        iss: url,
        aud: 'orders-api',
        iat: nowSeconds(),
        token_introspection: activeFacts(),
      }),
    )
    answer = () => ({
      contentType: 'application/token-introspection+jwt',
      body: `${header.toString('base64url')}.${payload.toString('base64url')}.`,
    })
    const { gate } = gateWith({ jwtResponse: true })
    await expect(check(gate, opaque())).rejects.toMatchObject({ status: 503 })
  })

  it('refuses a response made for another client (its aud)', async () => {
    const other = await signedAnswer(activeFacts(), { aud: 'billing-api' })
    answer = () => other
    const { gate, events } = gateWith({ jwtResponse: true })
    await expect(check(gate, opaque())).rejects.toMatchObject({ status: 503 })
    expect(failure(events)).toMatchObject({ reason: 'invalid_response' })
  })

  it('refuses a response issued by another issuer, and one without its typ', async () => {
    const foreign = await signedAnswer(activeFacts(), { iss: 'https://elsewhere.example' })
    const untyped = await signedAnswer(activeFacts(), { typ: 'JWT' })
    const { gate } = gateWith({ jwtResponse: true })
    answer = () => foreign
    await expect(check(gate, opaque())).rejects.toMatchObject({ status: 503 })
    answer = () => untyped
    await expect(check(gate, opaque())).rejects.toMatchObject({ status: 503 })
  })

  it('refuses a plain JSON answer when a JWT response was asked for', async () => {
    answer = () => json(activeFacts())
    const { gate } = gateWith({ jwtResponse: true })
    await expect(check(gate, opaque())).rejects.toMatchObject({ status: 503 })
  })
})

describe('answers that do not hold', () => {
  for (const active of ['true', 1, null, 'false']) {
    it(`never admits on active: ${JSON.stringify(active)} (503, not cached)`, async () => {
      answer = () => json(activeFacts({ active }))
      const { gate, events } = gateWith()
      const token = opaque()
      await expect(check(gate, token)).rejects.toMatchObject({ status: 503 })
      await expect(check(gate, token)).rejects.toMatchObject({ status: 503 })
      expect(calls).toBe(2)
      expect(failure(events)).toMatchObject({ reason: 'invalid_response' })
    })
  }

  it('refuses an active answer for another audience (401 audience)', async () => {
    answer = () => json(activeFacts({ aud: 'billing' }))
    const { gate } = gateWith()
    await expect(check(gate, opaque())).rejects.toMatchObject({ status: 401, reason: 'audience' })
  })

  it('refuses an active answer naming another issuer (401)', async () => {
    answer = () => json(activeFacts({ iss: 'https://elsewhere.example' }))
    const { gate } = gateWith()
    await expect(check(gate, opaque())).rejects.toMatchObject({
      status: 401,
      reason: 'unknown_issuer',
    })
  })

  it('refuses a refresh token, and any token type other than Bearer or DPoP (401 token_type)', async () => {
    const { gate } = gateWith()
    for (const tokenType of ['refresh_token', 'urn:ietf:params:oauth:token-type:id_token', 7]) {
      answer = () => json(activeFacts({ token_type: tokenType }))
      await expect(check(gate, opaque())).rejects.toMatchObject({
        status: 401,
        reason: 'token_type',
      })
    }
  })

  it('refuses an active answer without exp (401 missing_claim), and one already expired', async () => {
    const { gate } = gateWith()
    answer = () => json(activeFacts({ exp: undefined }))
    await expect(check(gate, opaque())).rejects.toMatchObject({
      status: 401,
      reason: 'missing_claim',
    })
    answer = () => json(activeFacts({ exp: nowSeconds() - 60 }))
    await expect(check(gate, opaque())).rejects.toMatchObject({ status: 401, reason: 'expired' })
  })

  it('refuses an answer whose nbf is in the future (401 not_yet_valid)', async () => {
    answer = () => json(activeFacts({ nbf: nowSeconds() + 600 }))
    const { gate } = gateWith()
    await expect(check(gate, opaque())).rejects.toMatchObject({
      status: 401,
      reason: 'not_yet_valid',
    })
  })

  it('refuses an answer of another client when allowedClientIds is set', async () => {
    answer = () => json(activeFacts({ client_id: 'intruder' }))
    const { gate } = gateWith({}, { allowedClientIds: ['shop'] })
    await expect(check(gate, opaque())).rejects.toMatchObject({ status: 401, reason: 'client' })
  })

  it('does not follow a redirect to elsewhere (503)', async () => {
    answer = () => ({ status: 302, body: '', headers: { location: 'https://attacker.example/' } })
    const { gate, events } = gateWith()
    await expect(check(gate, opaque())).rejects.toMatchObject({ status: 503 })
    expect(failure(events)).toMatchObject({ reason: 'status', status: 302 })
  })
})

describe('sender-constrained tokens (cnf.jkt in the answer)', () => {
  it('refuses a DPoP-bound token presented as a plain bearer token when DPoP is off', async () => {
    answer = () => json(activeFacts({ cnf: { jkt: 'x'.repeat(43) }, token_type: 'DPoP' }))
    const { gate } = gateWith()
    await expect(check(gate, opaque())).rejects.toMatchObject({
      status: 401,
      reason: 'sender_constrained',
    })
  })

  it('admits it with a proof by the bound key, and refuses a proof by another key', async () => {
    const key = await createDpopKey('ES256')
    const other = await createDpopKey('ES256')
    answer = () => json(activeFacts({ cnf: { jkt: key.jkt }, token_type: 'DPoP' }))
    const { gate } = gateWith(
      {},
      { dpop: { mode: 'allowed', publicBaseUrl: 'https://api.example' } },
    )
    const token = opaque()
    const request = { method: 'GET', url: 'https://api.example/orders' }
    const headersOf = async (signer: typeof key) => {
      const { Authorization, DPoP } = await signer.headers(token, request)
      return { authorization: Authorization, dpop: DPoP }
    }
    await expect(
      gate.check({ method: 'GET', url: '/orders', headers: await headersOf(key) }),
    ).resolves.toMatchObject({ auth: { clientId: 'shop' } })
    await expect(
      gate.check({ method: 'GET', url: '/orders', headers: await headersOf(other) }),
    ).rejects.toMatchObject({ status: 401, reason: 'dpop_binding' })
  })
})

describe('endpoints over plain http', () => {
  it('refuses at construction an http endpoint that is not on loopback', () => {
    expect(() =>
      createGate({
        issuers: [
          {
            issuer: url,
            jwksUri: `${url}/jwks`,
            introspection: {
              endpoint: 'http://idp.example/introspect',
              clientId: 'orders-api',
              clientSecret: 'orders-secret',
            },
          },
        ],
        audience: 'orders',
      }),
    ).toThrow(
      'createGate(options): "issuers[0].introspection.endpoint" must be https: tokens and client credentials would cross the network in clear text (or set allowInsecureHttp: true on a trusted network)',
    )
  })

  it('never sends a token to a discovered endpoint over http off loopback (503, no call)', async () => {
    discoveryEndpoint = 'http://idp.example/introspect'
    const events: GateEvent[] = []
    const gate = createGate({
      issuers: [
        {
          issuer: url,
          discovery: true,
          introspection: { clientId: 'orders-api', clientSecret: 'orders-secret' },
        },
      ],
      audience: 'orders',
      onEvent: (event) => events.push(event),
    })
    await expect(check(gate, opaque())).rejects.toMatchObject({ status: 503 })
    expect(failure(events)).toMatchObject({ reason: 'insecure_endpoint' })
    expect(calls).toBe(0)
    expect((await gate.ready()).introspection?.[0]?.state).toBe('unavailable')
  })
})
