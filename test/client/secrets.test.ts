/**
 * Secrets kept out of code and out of every output: whatever happens, no secret, private key,
 * refresh token or access token appears in an error, an event, `util.inspect()` or the JSON of a
 * tollgate object.
 */
import { inspect } from 'node:util'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import {
  createTokenSource,
  fromEnv,
  type TokenSourceEvent,
  type TokenSourceOptions,
} from '../../src/client/index.js'
import { keycloak } from '../../src/index.js'
import {
  assertionKey,
  manualClock,
  SECRET,
  signedInRefreshToken,
  startPlatformProvider,
  WEB_SECRET,
} from '../helpers/client-fixtures.js'
import type { RunningProvider } from '../helpers/oidc-provider.js'
import { startRedisServer } from '../helpers/redis.js'

let provider: RunningProvider
beforeAll(async () => {
  provider = await startPlatformProvider()
})
afterAll(async () => {
  await provider.close()
})

const PEM = assertionKey.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
const WRONG = 'wrong-secret-Lm3kP9-must-never-be-printed'

function renderings(value: unknown): string[] {
  return [
    inspect(value, { depth: Number.POSITIVE_INFINITY, showHidden: true }),
    JSON.stringify(value, (_key, item: unknown) =>
      item instanceof Error ? { ...item, message: item.message, cause: item.cause } : item,
    ) ?? '',
    value instanceof Error ? `${value.message} ${value.stack}` : String(value),
  ]
}

describe('fromEnv', () => {
  it('shows the variable’s name, never its value, in inspect(), JSON and strings', () => {
    process.env['TOLLGATE_TEST_SHOWN'] = SECRET
    try {
      const reference = fromEnv('TOLLGATE_TEST_SHOWN')
      for (const text of renderings(reference)) {
        expect(text).toContain('TOLLGATE_TEST_SHOWN')
        expect(text).not.toContain(SECRET)
      }
    } finally {
      delete process.env['TOLLGATE_TEST_SHOWN']
    }
  })
})

describe('no secret in any output', () => {
  it('keeps secrets, keys and tokens out of errors, events, inspect() and JSON, in success and failure', async () => {
    const outputs: unknown[] = []
    const tokens: string[] = []
    const events: TokenSourceEvent[] = []
    const issuer = keycloak({ authUrl: provider.url, realms: ['acme'] })
    const make = (options: Partial<TokenSourceOptions>) => {
      const source = createTokenSource({
        issuer,
        clientId: 'billing-sync',
        retry: { attempts: 2, baseDelayMs: 0 },
        clock: manualClock(),
        onEvent: (event) => events.push(event),
        ...options,
      } as TokenSourceOptions)
      outputs.push(source)
      return source
    }
    const attempt = async (promise: Promise<string>) => {
      try {
        tokens.push(await promise)
      } catch (error) {
        outputs.push(error)
      }
    }

    process.env['TOLLGATE_TEST_HYGIENE'] = SECRET
    process.env['TOLLGATE_TEST_HYGIENE_KEY'] = PEM
    try {
      await attempt(make({ clientSecret: SECRET }).get())
      await attempt(make({ clientSecret: fromEnv('TOLLGATE_TEST_HYGIENE') }).get())
      await attempt(make({ clientSecret: async () => SECRET }).get())
      await attempt(make({ clientSecret: WRONG }).get())
      await attempt(make({ clientSecret: WRONG, clientAuth: 'client_secret_post' }).get())
      await attempt(make({ clientSecret: SECRET, scope: 'desk:tickets:read' }).get())
      await attempt(
        make({
          clientSecret: () => {
            throw new Error(`vault said: ${SECRET}`)
          },
        }).get(),
      )
      await attempt(
        make({
          clientId: 'ledger-export',
          privateKey: fromEnv('TOLLGATE_TEST_HYGIENE_KEY'),
          privateKeyId: 'ledger-1',
        }).get(),
      )
      await attempt(make({ clientId: 'ledger-export', privateKey: 'not a key' }).get())
      const refreshToken = await signedInRefreshToken(provider, {
        scope: 'openid offline_access billing:read',
      })
      const rotated: string[] = []
      const refreshing = make({
        clientId: 'office-web',
        clientSecret: WEB_SECRET,
        refreshToken,
        onRefreshToken: (token) => {
          rotated.push(token)
        },
      })
      await attempt(refreshing.get())
      await attempt(
        make({
          clientId: 'office-web',
          clientSecret: WEB_SECRET,
          refreshToken: 'not-a-grant',
        }).get(),
      )
      await provider.stop()
      await attempt(make({ clientSecret: SECRET }).get())
      await provider.start()

      const secrets = [
        SECRET,
        WRONG,
        WEB_SECRET,
        PEM.split('\n')[1] as string,
        refreshToken as string,
      ]
      secrets.push(...rotated, ...tokens)
      expect(tokens.length).toBeGreaterThanOrEqual(5)
      expect(outputs.filter((output) => output instanceof Error).length).toBeGreaterThanOrEqual(6)
      for (const output of [...outputs, ...events]) {
        for (const text of renderings(output)) {
          for (const secret of secrets) expect(text).not.toContain(secret)
        }
      }
    } finally {
      delete process.env['TOLLGATE_TEST_HYGIENE']
      delete process.env['TOLLGATE_TEST_HYGIENE_KEY']
    }
  })

  it('keeps the access token out of shared_cache_error events when Redis refuses a write', async () => {
    const redis = await startRedisServer()
    try {
      const client = await redis.client()
      const events: TokenSourceEvent[] = []
      const source = createTokenSource({
        issuer: keycloak({ authUrl: provider.url, realms: ['acme'] }),
        clientId: 'billing-sync',
        clientSecret: SECRET,
        sharedCache: { redis: client },
        clock: manualClock(),
        onEvent: (event) => events.push(event),
      })
      // Redis answers the token's write with an error reply (OOM); ioredis attaches the command
      // and its arguments, the stored token among them, to that error.
      await client.config('SET', 'maxmemory', '1')
      const token = await source.get()
      const errors = events.filter((event) => event.type === 'shared_cache_error')
      expect(errors.length).toBeGreaterThanOrEqual(1)
      for (const event of errors) {
        for (const text of renderings(event)) expect(text).not.toContain(token)
        expect(event.error.message).toContain('OOM')
      }
    } finally {
      await redis.stop()
    }
  })

  it('describes a token source by issuer, client and where its secret comes from', () => {
    const source = createTokenSource({
      issuer: keycloak({ authUrl: 'https://sso.example.com', realms: ['acme'] }),
      clientId: 'billing-sync',
      clientSecret: fromEnv('BILLING_SYNC_SECRET'),
    })
    expect(JSON.parse(JSON.stringify(source))).toEqual({
      issuer: 'https://sso.example.com/realms/acme',
      clientId: 'billing-sync',
      grant: 'client_credentials',
      clientAuth: 'client_secret_basic',
      credential: "fromEnv('BILLING_SYNC_SECRET')",
      sharedCache: false,
    })
    expect(inspect(source)).toContain("fromEnv('BILLING_SYNC_SECRET')")
  })
})

describe('the environment', () => {
  it('is read in one place of the library: the resolver of fromEnv()', async () => {
    const { readdir, readFile } = await import('node:fs/promises')
    const { join } = await import('node:path')
    const root = new URL('../../', import.meta.url).pathname
    const readers: string[] = []
    for (const folder of ['src', 'adapters']) {
      const entries = await readdir(join(root, folder), { recursive: true })
      for (const entry of entries.filter((name) => name.endsWith('.ts'))) {
        const text = await readFile(join(root, folder, entry), 'utf8')
        const code = text.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '')
        if (/process\.env/.test(code)) readers.push(`${folder}/${entry}`)
      }
    }
    expect(readers).toEqual(['src/client/secrets.ts'])
  })
})
