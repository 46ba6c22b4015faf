/**
 * The grants and client authentication methods, against a real OpenID provider (oidc-provider on
 * loopback, Keycloak paths), with each token verified by tollgate's own gate: the end-to-end proof
 * that what the client side obtains, the resource-server side admits.
 */
import { inspect } from 'node:util'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createTokenSource,
  fromEnv,
  type TokenSourceEvent,
  type TokenSourceOptions,
} from '../../src/client/index.js'
import { createGate, keycloak } from '../../src/index.js'
import {
  assertionKey,
  claimsOf,
  POST_SECRET,
  SECRET,
  signedInRefreshToken,
  startPlatformProvider,
  WEB_SECRET,
} from '../helpers/client-fixtures.js'
import type { RunningProvider } from '../helpers/oidc-provider.js'

let provider: RunningProvider
beforeAll(async () => {
  provider = await startPlatformProvider()
})
afterAll(async () => {
  await provider.close()
})

const issuerOf = () => keycloak({ authUrl: provider.url, realms: ['acme'] })
const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } })

function admittedBy(audience: string, token: string) {
  const gate = createGate({ issuers: issuerOf(), audience })
  return gate.check(bearer(token)).finally(() => gate.close())
}

async function rejectionOf(promise: Promise<unknown>) {
  try {
    await promise
  } catch (error) {
    return error as Record<string, unknown>
  }
  throw new Error('expected a rejection')
}

describe('client_credentials', () => {
  const methods: Array<[string, Partial<TokenSourceOptions>]> = [
    ['client_secret_basic', { clientId: 'billing-sync', clientSecret: SECRET }],
    [
      'client_secret_post',
      { clientId: 'report-job', clientSecret: POST_SECRET, clientAuth: 'client_secret_post' },
    ],
    [
      'private_key_jwt',
      { clientId: 'ledger-export', privateKey: assertionKey.privateKey, privateKeyId: 'ledger-1' },
    ],
  ]

  it.each(methods)('obtains a token the gate admits, authenticating with %s', async (_m, auth) => {
    const source = createTokenSource({
      issuer: issuerOf(),
      ...auth,
      scope: 'office:records:read',
      resource: 'urn:platform:office',
    } as TokenSourceOptions)
    const token = await source.get()
    const { auth: admission } = await admittedBy('office', token)
    expect(admission).toMatchObject({ clientId: auth.clientId, scopes: ['office:records:read'] })
  })

  it('refuses a privateKeyAlgorithm the key cannot sign with, before any request', async () => {
    provider.resetGrants()
    const source = createTokenSource({
      issuer: issuerOf(),
      clientId: 'ledger-export',
      privateKey: assertionKey.privateKey,
      privateKeyId: 'ledger-1',
      privateKeyAlgorithm: 'RS256',
    })
    const error = await rejectionOf(source.get())
    expect(error).toMatchObject({ code: 'ERR_SECRET_UNAVAILABLE', retryable: false })
    expect(error['message']).toContain('privateKeyAlgorithm RS256')
    expect(provider.grants).toHaveLength(0)
  })

  it('signs private_key_jwt assertions with a PEM key read from the environment', async () => {
    process.env['TOLLGATE_TEST_LEDGER_KEY'] = assertionKey.privateKey
      .export({ format: 'pem', type: 'pkcs8' })
      .toString()
    try {
      const source = createTokenSource({
        issuer: issuerOf(),
        clientId: 'ledger-export',
        privateKey: fromEnv('TOLLGATE_TEST_LEDGER_KEY'),
        privateKeyId: 'ledger-1',
      })
      expect(claimsOf(await source.get())).toMatchObject({ client_id: 'ledger-export' })
    } finally {
      delete process.env['TOLLGATE_TEST_LEDGER_KEY']
    }
  })

  it('asks for the product audience with a resource indicator (RFC 8707)', async () => {
    const source = createTokenSource({
      issuer: issuerOf(),
      clientId: 'billing-sync',
      clientSecret: SECRET,
      resource: 'urn:platform:office',
    })
    const token = await source.get()
    expect(claimsOf(token)['aud']).toBe('office')
    expect(await rejectionOf(admittedBy('gateway', token))).toMatchObject({
      code: 'ERR_TOKEN_INVALID',
      reason: 'audience',
    })
  })

  it('finds the token endpoint by discovery', async () => {
    const source = createTokenSource({
      issuer: provider.issuer(),
      discovery: true,
      clientId: 'billing-sync',
      clientSecret: SECRET,
    })
    expect((await admittedBy('gateway', await source.get())).auth?.clientId).toBe('billing-sync')
  })

  it('uses an explicit token endpoint', async () => {
    const source = createTokenSource({
      issuer: provider.issuer(),
      tokenEndpoint: provider.tokenEndpoint(),
      clientId: 'billing-sync',
      clientSecret: SECRET,
    })
    expect(claimsOf(await source.get())['iss']).toBe(provider.issuer())
  })
})

describe('refresh_token', () => {
  const refreshTokenOfSignIn = () =>
    signedInRefreshToken(provider, {
      scope: 'openid offline_access office:records:read',
      resource: 'urn:platform:office',
    })

  it('obtains an access token with a refresh token, and the gate admits it', async () => {
    const source = createTokenSource({
      issuer: issuerOf(),
      clientId: 'office-web',
      clientSecret: WEB_SECRET,
      refreshToken: await refreshTokenOfSignIn(),
      resource: 'urn:platform:office',
    })
    const { auth } = await admittedBy('office', await source.get())
    expect(auth).toMatchObject({ subject: 'user-1', clientId: 'office-web' })
  })

  it('hands each rotated refresh token to onRefreshToken and uses it for the next renewal', async () => {
    const first = await refreshTokenOfSignIn()
    const rotated: string[] = []
    const source = createTokenSource({
      issuer: issuerOf(),
      clientId: 'office-web',
      clientSecret: WEB_SECRET,
      refreshToken: first,
      onRefreshToken: (token) => {
        rotated.push(token)
      },
    })
    await source.get()
    expect(source.invalidate(await source.get())).toBe(true)
    await source.get()
    expect(rotated).toHaveLength(2)
    expect(new Set([first, ...rotated]).size).toBe(3)
  })

  it.each([
    ['never settles', 'timed_out', () => new Promise<void>(() => {})],
    [
      'throws',
      'threw',
      () => {
        throw new Error('store down')
      },
    ],
  ] as const)('carries on and reports it when onRefreshToken %s', async (_case, reason, hook) => {
    const events: TokenSourceEvent[] = []
    const source = createTokenSource({
      issuer: issuerOf(),
      clientId: 'office-web',
      clientSecret: WEB_SECRET,
      refreshToken: await refreshTokenOfSignIn(),
      onRefreshToken: hook,
      timeoutMs: 100,
      onEvent: (event) => events.push(event),
    })
    const first = await source.get()
    // The next refresh, with the rotated token, is not blocked behind the hook.
    expect(source.invalidate(first)).toBe(true)
    expect(await source.get()).not.toBe(first)
    expect(events.filter((event) => event.type === 'refresh_token_store_failed')).toEqual([
      {
        type: 'refresh_token_store_failed',
        issuer: provider.issuer(),
        clientId: 'office-web',
        reason,
      },
      {
        type: 'refresh_token_store_failed',
        issuer: provider.issuer(),
        clientId: 'office-web',
        reason,
      },
    ])
  })

  it('releases a caller waiting on onRefreshToken when the source is closed', async () => {
    let called!: () => void
    const hookCalled = new Promise<void>((resolve) => {
      called = resolve
    })
    const source = createTokenSource({
      issuer: issuerOf(),
      clientId: 'office-web',
      clientSecret: WEB_SECRET,
      refreshToken: await refreshTokenOfSignIn(),
      onRefreshToken: () => {
        called()
        return new Promise<void>(() => {})
      },
    })
    const waiting = rejectionOf(source.get())
    await hookCalled
    source.close()
    expect(await waiting).toMatchObject({ code: 'ERR_TOKEN_SOURCE_CLOSED' })
  })
})

describe('answers that are not a token', () => {
  type Answer = { status: number; type?: string; body: string } | 'hang'
  let answer: Answer = { status: 200, body: '{}' }
  let faulty: import('node:http').Server
  let faultyUrl: string
  const requests: string[] = []
  beforeAll(async () => {
    const { createServer } = await import('node:http')
    faulty = createServer((req, res) => {
      requests.push(`${req.method} ${req.url}`)
      if (answer === 'hang') return
      res.writeHead(answer.status, { 'content-type': answer.type ?? 'application/json' })
      res.end(answer.body)
    })
    await new Promise<void>((resolve) => faulty.listen(0, '127.0.0.1', resolve))
    const { port } = faulty.address() as import('node:net').AddressInfo
    faultyUrl = `http://127.0.0.1:${port}`
  })
  afterAll(async () => {
    faulty.closeAllConnections()
    await new Promise((resolve) => faulty.close(resolve))
  })

  const source = (overrides: Partial<TokenSourceOptions> = {}) =>
    createTokenSource({
      issuer: `${faultyUrl}/realms/acme`,
      clientId: 'billing-sync',
      clientSecret: SECRET,
      retry: { attempts: 1 },
      ...overrides,
    })

  it.each<[string, Answer, Record<string, unknown>]>([
    [
      'a 502 with an HTML page',
      { status: 502, type: 'text/html', body: '<h1>Bad Gateway</h1>' },
      { code: 'ERR_TOKEN_ENDPOINT_UNAVAILABLE', retryable: true, status: 502 },
    ],
    [
      'a 429',
      { status: 429, body: '{"error":"slow_down"}' },
      { code: 'ERR_TOKEN_ENDPOINT_UNAVAILABLE', retryable: true, status: 429 },
    ],
    [
      'a 400 temporarily_unavailable',
      { status: 400, body: '{"error":"temporarily_unavailable"}' },
      {
        code: 'ERR_TOKEN_ENDPOINT_UNAVAILABLE',
        retryable: true,
        oauthError: 'temporarily_unavailable',
      },
    ],
    [
      'Keycloak’s answer to a wrong secret (401 unauthorized_client)',
      {
        status: 401,
        body: '{"error":"unauthorized_client","error_description":"Invalid client or Invalid client credentials"}',
      },
      { code: 'ERR_CLIENT_REFUSED', retryable: false, oauthError: 'unauthorized_client' },
    ],
    [
      'a 200 that is not JSON',
      { status: 200, type: 'text/html', body: '<html></html>' },
      { code: 'ERR_TOKEN_RESPONSE_INVALID', retryable: false },
    ],
    [
      'a 200 without access_token',
      { status: 200, body: '{"token_type":"Bearer","expires_in":300}' },
      { code: 'ERR_TOKEN_RESPONSE_INVALID', retryable: false },
    ],
    [
      'a DPoP-bound token',
      { status: 200, body: '{"access_token":"x","token_type":"DPoP","expires_in":300}' },
      { code: 'ERR_TOKEN_RESPONSE_INVALID', retryable: false },
    ],
  ])('classifies %s', async (_case, given, expected) => {
    answer = given
    expect(await rejectionOf(source().get())).toMatchObject({
      name: 'TokenSourceError',
      ...expected,
    })
  })

  it('keeps what openid-client said about an unusable answer, without the answer itself', async () => {
    answer = { status: 200, body: '{"token_type":"Bearer","expires_in":300,"leak":"rt-SECRET"}' }
    const error = await rejectionOf(source().get())
    expect(error.message).toBe(
      `token endpoint of ${faultyUrl}/realms/acme gave client "billing-sync" an answer that is not a usable response: "response" body "access_token" property must be a string`,
    )
    expect(error['cause']).toMatchObject({
      name: 'ClientError',
      code: 'OAUTH_INVALID_RESPONSE',
      cause: { name: 'OperationProcessingError', code: 'OAUTH_INVALID_RESPONSE' },
    })
    expect(inspect(error, { depth: 10 })).not.toContain('rt-SECRET')
  })

  it('classifies a provider that does not answer within timeoutMs as retryable', async () => {
    answer = 'hang'
    expect(await rejectionOf(source({ timeoutMs: 100 }).get())).toMatchObject({
      code: 'ERR_TOKEN_ENDPOINT_UNAVAILABLE',
      retryable: true,
    })
  })

  it('assumes a lifetime of 60 seconds when expires_in is missing', async () => {
    answer = { status: 200, body: '{"access_token":"opaque-1","token_type":"Bearer"}' }
    let now = 0
    const tokens = source({ clock: { now: () => now } })
    expect(await tokens.get()).toBe('opaque-1')
    answer = { status: 200, body: '{"access_token":"opaque-2","token_type":"Bearer"}' }
    now = 54_000
    expect(await tokens.get()).toBe('opaque-2')
  })

  it('hands out a token with expires_in 0 to the caller who asked, and never from the cache', async () => {
    answer = { status: 200, body: '{"access_token":"once-1","token_type":"Bearer","expires_in":0}' }
    const tokens = source({ clock: { now: () => 1_000_000 } })
    expect(await tokens.get()).toBe('once-1')
    answer = { status: 200, body: '{"access_token":"once-2","token_type":"Bearer","expires_in":0}' }
    expect(await tokens.get()).toBe('once-2')
  })

  it('sends a refresh token once: never again after a request that timed out', async () => {
    answer = 'hang'
    const before = requests.length
    const error = await rejectionOf(
      source({
        refreshToken: 'refresh-token-value',
        timeoutMs: 100,
        retry: { attempts: 3, baseDelayMs: 0 },
      }).get(),
    )
    expect(error).toMatchObject({ code: 'ERR_TOKEN_ENDPOINT_UNAVAILABLE', retryable: true })
    expect(requests.length - before).toBe(1)
  })

  it('retries a refresh token request the provider answered with a 503', async () => {
    answer = { status: 503, body: '{"error":"temporarily_unavailable"}' }
    const before = requests.length
    await rejectionOf(
      source({ refreshToken: 'refresh-token-value', retry: { attempts: 2, baseDelayMs: 0 } }).get(),
    )
    expect(requests.length - before).toBe(2)
  })

  it('classifies a fetch option answering with something other than a Response as invalid, once', async () => {
    let calls = 0
    const error = await rejectionOf(
      source({
        retry: { attempts: 3, baseDelayMs: 0 },
        fetch: (async () => {
          calls++
          return { status: 200 }
        }) as unknown as typeof fetch,
      }).get(),
    )
    expect(error).toMatchObject({ code: 'ERR_TOKEN_RESPONSE_INVALID', retryable: false })
    expect(calls).toBe(1)
  })

  it('aborts the request in flight when the source is closed', async () => {
    answer = 'hang'
    const signals: AbortSignal[] = []
    let sent!: () => void
    const requested = new Promise<void>((resolve) => {
      sent = resolve
    })
    const tokens = source({
      timeoutMs: 60_000,
      fetch: (input, init) => {
        if (init?.signal) signals.push(init.signal)
        sent()
        return fetch(input, init)
      },
    })
    const waiting = rejectionOf(tokens.get())
    await requested
    tokens.close()
    expect(await waiting).toMatchObject({ code: 'ERR_TOKEN_SOURCE_CLOSED' })
    expect(signals.map((signal) => signal.aborted)).toEqual([true])
  })

  it('warns when discovery names a plain-http token endpoint beyond loopback', async () => {
    answer = {
      status: 200,
      body: JSON.stringify({
        issuer: `${faultyUrl}/realms/acme`,
        token_endpoint: 'http://tokens.example.invalid/token',
      }),
    }
    const warnings: Error[] = []
    const onWarning = (warning: Error) => warnings.push(warning)
    process.on('warning', onWarning)
    try {
      await rejectionOf(source({ discovery: true, allowInsecureHttp: true }).get())
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      process.off('warning', onWarning)
    }
    expect(warnings.map((warning) => (warning as Error & { code?: string }).code)).toEqual([
      'TOLLGATE_INSECURE_HTTP',
    ])
    expect(warnings[0]?.message).toContain('tokens.example.invalid')
  })

  it('sends every request through the fetch option', async () => {
    answer = {
      status: 200,
      body: '{"access_token":"opaque","token_type":"bearer","expires_in":300}',
    }
    const seen: string[] = []
    const tokens = source({
      fetch: (input, init) => {
        seen.push(String(input))
        return fetch(input, init)
      },
    })
    await tokens.get()
    expect(seen).toEqual([`${faultyUrl}/realms/acme/protocol/openid-connect/token`])
  })
})

describe('a provider that refuses a client with a bare status', () => {
  // The real provider behind a proxy that turns its refusal of a client into what some
  // deployments answer: a bare 401 or 403, empty body, no challenge.
  let bareStatus = 403
  let proxy: import('node:http').Server
  let proxyUrl: string
  beforeAll(async () => {
    const { createServer } = await import('node:http')
    proxy = createServer(async (req, res) => {
      let body = ''
      for await (const chunk of req) body += String(chunk)
      const headers = new Headers()
      for (const [name, value] of Object.entries(req.headers)) {
        if (typeof value === 'string' && name !== 'host') headers.set(name, value)
      }
      const upstream = await fetch(`${provider.url}${req.url ?? '/'}`, {
        method: req.method ?? 'GET',
        headers,
        ...(req.method === 'POST' ? { body } : {}),
      })
      const text = await upstream.text()
      if (upstream.status === 400 || upstream.status === 401) {
        res.writeHead(bareStatus, { 'content-length': '0' }).end()
        return
      }
      res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? '' })
      res.end(text)
    })
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
    const { port } = proxy.address() as import('node:net').AddressInfo
    proxyUrl = `http://127.0.0.1:${port}`
    process.env['TOLLGATE_TEST_WRONG_SECRET'] = 'wrong-secret-value-never-printed'
  })
  afterAll(async () => {
    delete process.env['TOLLGATE_TEST_WRONG_SECRET']
    proxy.closeAllConnections()
    await new Promise((resolve) => proxy.close(resolve))
  })

  const refusalOf = (overrides: Partial<TokenSourceOptions>) =>
    rejectionOf(
      createTokenSource({
        issuer: keycloak({ authUrl: proxyUrl, realms: ['acme'] }),
        clientId: 'billing-sync',
        clientSecret: fromEnv('TOLLGATE_TEST_WRONG_SECRET'),
        retry: { attempts: 1 },
        ...overrides,
      } as TokenSourceOptions).get(),
    )

  it.each([401, 403])(
    'reports a bare %i to a wrong secret as the client refused, naming the client and where its secret came from',
    async (status) => {
      bareStatus = status
      const error = await refusalOf({})
      expect(error).toMatchObject({
        name: 'TokenSourceError',
        code: 'ERR_CLIENT_REFUSED',
        retryable: false,
        status,
        clientId: 'billing-sync',
        secretSource: "fromEnv('TOLLGATE_TEST_WRONG_SECRET')",
      })
      expect(error['message']).toContain('refused client "billing-sync"')
      expect(error['message']).toContain(`status ${status}`)
      expect(error['message']).toContain("fromEnv('TOLLGATE_TEST_WRONG_SECRET')")
      expect(error['message']).not.toContain('wrong-secret-value')
    },
  )

  it('says that client_secret_basic percent-encodes a client id with - . _ ~ and that client_secret_post avoids it', async () => {
    bareStatus = 403
    const error = await refusalOf({})
    expect(error['message']).toContain('percent-encoded')
    expect(error['message']).toContain("clientAuth: 'client_secret_post'")
  })

  it.each<[string, Partial<TokenSourceOptions>]>([
    ['a client id of letters and digits', { clientId: 'billingsync' }],
    [
      'client_secret_post',
      { clientId: 'report-job', clientAuth: 'client_secret_post' } as Partial<TokenSourceOptions>,
    ],
  ])('gives no percent-encoding hint for %s', async (_case, overrides) => {
    bareStatus = 403
    const error = await refusalOf(overrides)
    expect(error).toMatchObject({ code: 'ERR_CLIENT_REFUSED', status: 403 })
    expect(error['message']).not.toContain('percent-encoded')
  })
})
