/**
 * The token source's cache, single-flight, renewal schedule and failure handling, against a real
 * OpenID provider on loopback. Time is a clock the tests move; nothing waits for a token to age.
 */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import {
  createTokenSource,
  fromEnv,
  type TokenSourceEvent,
  type TokenSourceOptions,
} from '../../src/client/index.js'
import { keycloak } from '../../src/index.js'
import {
  claimsOf,
  manualClock,
  SECRET,
  signedInRefreshToken,
  startPlatformProvider,
  WEB_SECRET,
} from '../helpers/client-fixtures.js'
import type { RunningProvider } from '../helpers/oidc-provider.js'
import { freePort } from '../helpers/redis.js'

let provider: RunningProvider
beforeAll(async () => {
  provider = await startPlatformProvider({ accessTokenSeconds: 300 })
})
afterAll(async () => {
  await provider.close()
})
beforeEach(() => {
  provider.resetGrants()
})

const LIFETIME_MS = 300_000

function setup(overrides: Partial<TokenSourceOptions> = {}) {
  const clock = manualClock()
  const events: TokenSourceEvent[] = []
  const waiters: Array<[string, () => void]> = []
  const source = createTokenSource({
    issuer: keycloak({ authUrl: provider.url, realms: ['acme'] }),
    clientId: 'billing-sync',
    clientSecret: SECRET,
    retry: { attempts: 3, baseDelayMs: 0 },
    clock,
    onEvent: (event) => {
      events.push(event)
      for (const [type, resolve] of waiters.splice(0)) {
        if (type === event.type) resolve()
        else waiters.push([type, resolve])
      }
    },
    ...overrides,
  } as TokenSourceOptions)
  const next = (type: TokenSourceEvent['type']) =>
    new Promise<void>((resolve) => waiters.push([type, resolve]))
  return { source, clock, events, next }
}

async function rejectionOf(promise: Promise<unknown>) {
  try {
    await promise
  } catch (error) {
    return error as Error & Record<string, unknown>
  }
  throw new Error('expected a rejection')
}

describe('cache and single-flight', () => {
  it('answers 1,000 concurrent get() calls with one token request', async () => {
    const { source } = setup()
    const tokens = await Promise.all(Array.from({ length: 1000 }, () => source.get()))
    expect(new Set(tokens).size).toBe(1)
    expect(provider.grantCount()).toBe(1)
  })

  it('answers later calls from the cache without a request', async () => {
    const { source, clock, events } = setup()
    const first = await source.get()
    clock.advance(LIFETIME_MS * 0.6)
    expect(await source.get()).toBe(first)
    // A renewal in the background reports its request within get() itself, before the provider
    // has seen it: counting events, not grants, catches one.
    expect(events.filter((event) => event.type === 'token_requested')).toHaveLength(1)
    expect(provider.grantCount()).toBe(1)
  })

  it('makes one request per scope and never hands one scope the other scope’s token', async () => {
    const { source } = setup()
    const calls = Array.from({ length: 1000 }, (_, index) => {
      const scope = index % 2 === 0 ? 'billing:read' : 'office:records:read'
      return source.get({ scope }).then((token) => [scope, token] as const)
    })
    const results = await Promise.all(calls)
    expect(provider.grantCount()).toBe(2)
    for (const [scope, token] of results) expect(claimsOf(token)['scope']).toBe(scope)
  })

  it('makes one request per resource and never crosses audiences', async () => {
    const { source } = setup()
    const [gateway, office] = await Promise.all([
      source.get({ resource: 'urn:platform:gateway' }),
      source.get({ resource: 'urn:platform:office' }),
    ])
    expect([claimsOf(gateway as string)['aud'], claimsOf(office as string)['aud']]).toEqual([
      'gateway',
      'office',
    ])
    expect(provider.grantCount()).toBe(2)
  })

  it('treats the same scopes in another order as the same request', async () => {
    const { source } = setup()
    const [a, b] = await Promise.all([
      source.get({ scope: 'billing:read office:records:read' }),
      source.get({ scope: ['office:records:read', 'billing:read', 'billing:read'] }),
    ])
    expect(a).toBe(b)
    expect(provider.grantCount()).toBe(1)
  })

  it('keeps two sources of different clients apart', async () => {
    const billing = setup().source
    const report = setup({
      clientId: 'report-job',
      clientSecret: 'post-secret-Ht5nW2pL-must-never-be-printed',
      clientAuth: 'client_secret_post',
    }).source
    const [a, b] = await Promise.all([billing.get(), report.get()])
    expect([claimsOf(a)['client_id'], claimsOf(b)['client_id']]).toEqual([
      'billing-sync',
      'report-job',
    ])
  })
})

describe('renewal', () => {
  it('does not renew before 65% of the lifetime', async () => {
    const { source, clock, events } = setup()
    const first = await source.get()
    clock.advance(LIFETIME_MS * 0.64)
    expect(await source.get()).toBe(first)
    // A background renewal would have reported its request within that get().
    expect(events.filter((event) => event.type === 'token_requested')).toHaveLength(1)
    expect(provider.grantCount()).toBe(1)
  })

  it('renews in the background after 75% of the lifetime, serving the held token meanwhile', async () => {
    const { source, clock, next, events } = setup()
    const first = await source.get()
    clock.advance(LIFETIME_MS * 0.76)
    const renewed = next('token_renewed')
    expect(await source.get()).toBe(first)
    await renewed
    const second = await source.get()
    expect(second).not.toBe(first)
    expect(provider.grantCount()).toBe(2)
    expect(events.map((event) => event.type)).toEqual([
      'token_requested',
      'token_obtained',
      'token_requested',
      'token_renewed',
    ])
  })

  it('never hands out a token in the last 30 seconds of its lifetime', async () => {
    const { source, clock } = setup({ renewal: { atFraction: 0.95, jitterFraction: 0 } })
    const first = await source.get()
    clock.advance(LIFETIME_MS - 30_000)
    const second = await source.get()
    expect(second).not.toBe(first)
    expect(provider.grantCount()).toBe(2)
  })
})

describe('failures', () => {
  it('serves the cached token while the provider is down, then fails with a retryable error', async () => {
    const { source, clock, events, next } = setup()
    const first = await source.get()
    await provider.stop()
    try {
      clock.advance(LIFETIME_MS * 0.8)
      const failed = next('token_request_failed')
      expect(await source.get()).toBe(first)
      await failed
      clock.advance(LIFETIME_MS * 0.15)
      const error = await rejectionOf(source.get())
      expect(error).toMatchObject({
        name: 'TokenSourceError',
        code: 'ERR_TOKEN_ENDPOINT_UNAVAILABLE',
        retryable: true,
        clientId: 'billing-sync',
      })
      const failures = events.filter((event) => event.type === 'token_request_failed')
      expect(failures[0]).toMatchObject({ servingCached: true, willRetry: true })
      expect(failures.at(-1)).toMatchObject({ servingCached: false, willRetry: false })
    } finally {
      await provider.start()
    }
  })

  it('retries a failing request as many times as configured', async () => {
    const { source, events } = setup({ retry: { attempts: 4, baseDelayMs: 0 } })
    await provider.stop()
    try {
      await rejectionOf(source.get())
    } finally {
      await provider.start()
    }
    expect(events.filter((event) => event.type === 'token_requested')).toHaveLength(4)
  })

  it('recovers once the provider is back and the pause after the failure has passed', async () => {
    const { source, clock } = setup({ retry: { attempts: 1, baseDelayMs: 100 } })
    await provider.stop()
    const error = await rejectionOf(source.get())
    await provider.start()
    expect(await rejectionOf(source.get())).toBe(error)
    expect(error.retryAfterSeconds).toBe(1)
    clock.advance(1000)
    expect(claimsOf(await source.get())['client_id']).toBe('billing-sync')
  })

  it('refuses a wrong secret with a non-retryable error naming the client and the secret’s origin', async () => {
    const { source, events } = setup({ clientSecret: 'wrong-secret-value-0123456789' })
    const error = await rejectionOf(source.get())
    expect(error).toMatchObject({
      code: 'ERR_CLIENT_REFUSED',
      retryable: false,
      oauthError: 'invalid_client',
      secretSource: 'the "clientSecret" option',
    })
    expect(error.message).toContain('"billing-sync"')
    expect(error.message).toContain('the "clientSecret" option')
    expect(events.filter((event) => event.type === 'token_requested')).toHaveLength(1)
  })

  it('names the environment variable when the secret from it is refused', async () => {
    process.env['TOLLGATE_TEST_WRONG_SECRET'] = 'wrong-secret-value-0123456789'
    try {
      const { source } = setup({ clientSecret: fromEnv('TOLLGATE_TEST_WRONG_SECRET') })
      const error = await rejectionOf(source.get())
      expect(error.code).toBe('ERR_CLIENT_REFUSED')
      expect(error.message).toContain("fromEnv('TOLLGATE_TEST_WRONG_SECRET')")
    } finally {
      delete process.env['TOLLGATE_TEST_WRONG_SECRET']
    }
  })

  it('refuses a scope the client may not have with ERR_TOKEN_REQUEST_REFUSED', async () => {
    const { source } = setup({ scope: 'desk:tickets:read' })
    expect(await rejectionOf(source.get())).toMatchObject({
      code: 'ERR_TOKEN_REQUEST_REFUSED',
      oauthError: 'invalid_scope',
      retryable: false,
    })
  })

  it('refuses an unknown resource with ERR_TOKEN_REQUEST_REFUSED', async () => {
    const { source } = setup({ resource: 'urn:platform:unknown' })
    expect(await rejectionOf(source.get())).toMatchObject({
      code: 'ERR_TOKEN_REQUEST_REFUSED',
      oauthError: 'invalid_target',
    })
  })

  it('never lets a throwing event listener fail a token request', async () => {
    const { source } = setup({
      onEvent: () => {
        throw new Error('broken metrics hook')
      },
    })
    expect(claimsOf(await source.get())['client_id']).toBe('billing-sync')
  })

  it('keeps a process whose only work is get() alive through a retry, until it has the token', async () => {
    const refusing = `http://127.0.0.1:${await freePort()}/token`
    const job = fileURLToPath(new URL('../helpers/token-job.ts', import.meta.url))
    const { code, stdout } = await new Promise<{ code: number | null; stdout: string }>(
      (resolve, reject) => {
        execFile(
          process.execPath,
          ['--import', 'tsx', job, provider.url, refusing],
          (error, out) => {
            if (error !== null && typeof error.code !== 'number') reject(error)
            else resolve({ code: error === null ? 0 : (error.code as number), stdout: out })
          },
        )
      },
    )
    expect({ code, stdout: stdout.trim() }).toEqual({ code: 0, stdout: 'token for billing-sync' })
  })

  it('fails every get() after close() with ERR_TOKEN_SOURCE_CLOSED', async () => {
    const { source } = setup()
    await source.get()
    source.close()
    expect(await rejectionOf(source.get())).toMatchObject({
      code: 'ERR_TOKEN_SOURCE_CLOSED',
      retryable: false,
    })
  })
})

describe('secret from the environment', () => {
  it('reads the variable when the first token is needed, not at construction', async () => {
    const { source } = setup({ clientSecret: fromEnv('TOLLGATE_TEST_LATE_SECRET') })
    process.env['TOLLGATE_TEST_LATE_SECRET'] = SECRET
    try {
      expect(claimsOf(await source.get())['client_id']).toBe('billing-sync')
    } finally {
      delete process.env['TOLLGATE_TEST_LATE_SECRET']
    }
  })

  it.each([
    ['unset', undefined],
    ['empty', ''],
  ])('fails without a request when the variable is %s', async (_case, value) => {
    if (value !== undefined) process.env['TOLLGATE_TEST_NO_SECRET'] = value
    try {
      const { source } = setup({ clientSecret: fromEnv('TOLLGATE_TEST_NO_SECRET') })
      const error = await rejectionOf(source.get())
      expect(error).toMatchObject({
        code: 'ERR_SECRET_UNAVAILABLE',
        retryable: false,
        secretSource: "fromEnv('TOLLGATE_TEST_NO_SECRET')",
      })
      expect(error.message).toContain(`is ${_case === 'unset' ? 'not set' : 'empty'}`)
      expect(provider.grants).toHaveLength(0)
    } finally {
      delete process.env['TOLLGATE_TEST_NO_SECRET']
    }
  })

  it('takes the secret from an async function (a secrets manager)', async () => {
    const { source } = setup({ clientSecret: async () => SECRET })
    expect(claimsOf(await source.get())['client_id']).toBe('billing-sync')
  })
})

describe('refresh tokens', () => {
  const refreshToken = () =>
    signedInRefreshToken(provider, {
      scope: 'openid offline_access billing:read office:records:read',
      resource: ['urn:platform:gateway', 'urn:platform:office'],
      tokenResource: 'urn:platform:gateway',
    })

  it('refreshes for two resources at once without ever sending a rotated-out refresh token', async () => {
    const { source } = setup({
      clientId: 'office-web',
      clientSecret: WEB_SECRET,
      refreshToken: await refreshToken(),
    })
    provider.resetGrants()
    const tokens = await Promise.all([
      source.get({ resource: 'urn:platform:gateway' }),
      source.get({ resource: 'urn:platform:office' }),
      source.get({ resource: 'urn:platform:gateway' }),
    ])
    expect(tokens.map((token) => claimsOf(token)['aud'])).toEqual(['gateway', 'office', 'gateway'])
    expect(provider.grants.map((grant) => [grant.grantType, grant.ok])).toEqual([
      ['refresh_token', true],
      ['refresh_token', true],
    ])
  })

  it('stops at a refresh token the provider deleted (400 invalid_request) with ERR_REFRESH_TOKEN_REFUSED, and never sends it again', async () => {
    let sent = 0
    const counting: typeof fetch = (input, init) => {
      if (String(init?.body ?? '').includes('grant_type=refresh_token')) sent++
      return fetch(input, init)
    }
    const { source, clock, events } = setup({
      clientId: 'office-web',
      clientSecret: WEB_SECRET,
      refreshToken: await refreshToken(),
      fetch: counting,
    })
    provider.interceptTokenEndpoint({
      status: 400,
      contentType: 'application/json',
      body: JSON.stringify({ error: 'invalid_request', error_description: 'unknown token' }),
    })
    let first: Error & Record<string, unknown>
    try {
      first = await rejectionOf(source.get())
    } finally {
      provider.interceptTokenEndpoint(undefined)
    }
    expect(first).toMatchObject({
      code: 'ERR_REFRESH_TOKEN_REFUSED',
      retryable: false,
      oauthError: 'invalid_request',
      status: 400,
      retryAfterSeconds: undefined,
    })
    expect(first.message).toBe(
      `token endpoint of ${provider.issuer()} refused the refresh token of client "office-web" (invalid_request): ` +
        'its grant has ended (revoked, expired, unknown or already used), and only a new authorization by the user gives a new one',
    )
    // Later calls, for any parameters and long after, fail the same way without a request.
    for (const parameters of [undefined, { resource: 'urn:platform:office' }]) {
      clock.advance(600_000)
      expect(await rejectionOf(source.get(parameters))).toMatchObject({
        code: 'ERR_REFRESH_TOKEN_REFUSED',
      })
    }
    expect(sent).toBe(1)
    expect(events.filter((event) => event.type === 'token_requested')).toHaveLength(1)
    expect(
      events.flatMap((event) =>
        event.type === 'token_request_failed' ? [[event.code, event.willRetry]] : [],
      ),
    ).toEqual([
      ['ERR_REFRESH_TOKEN_REFUSED', false],
      ['ERR_REFRESH_TOKEN_REFUSED', false],
      ['ERR_REFRESH_TOKEN_REFUSED', false],
    ])
  })

  it('refuses a rotated-out refresh token the provider answers invalid_grant to, then takes up the new one its refreshToken function gives', async () => {
    const stale = await refreshToken()
    const first = setup({
      clientId: 'office-web',
      clientSecret: WEB_SECRET,
      refreshToken: stale,
      resource: 'urn:platform:office',
    })
    await first.source.get()
    first.source.close()
    let current = stale
    const { source } = setup({
      clientId: 'office-web',
      clientSecret: WEB_SECRET,
      refreshToken: () => current,
      resource: 'urn:platform:office',
    })
    expect(await rejectionOf(source.get())).toMatchObject({
      code: 'ERR_REFRESH_TOKEN_REFUSED',
      oauthError: 'invalid_grant',
    })
    expect(await rejectionOf(source.get())).toMatchObject({ code: 'ERR_REFRESH_TOKEN_REFUSED' })
    expect(provider.grants.filter((grant) => grant.grantType === 'refresh_token')).toHaveLength(2)
    // The user authorized again: the function now gives the new refresh token.
    current = await refreshToken()
    expect(claimsOf(await source.get())['aud']).toBe('office')
  })

  it('renews before the access token expires, with the rotated refresh token', async () => {
    const { source, clock } = setup({
      clientId: 'office-web',
      clientSecret: WEB_SECRET,
      refreshToken: await refreshToken(),
      resource: 'urn:platform:office',
    })
    provider.resetGrants()
    const first = await source.get()
    clock.advance(LIFETIME_MS - 30_000)
    expect(await source.get()).not.toBe(first)
    clock.advance(LIFETIME_MS - 30_000)
    await source.get()
    expect(provider.grants.map((grant) => grant.ok)).toEqual([true, true, true])
  })
})
