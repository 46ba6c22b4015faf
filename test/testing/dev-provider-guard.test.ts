/**
 * The development provider stays a development tool: it refuses to start under
 * `NODE_ENV=production` unless told it is a demo, and it serves only requests addressed to
 * loopback by name, so that a page of another site whose name resolves to 127.0.0.1 (DNS
 * rebinding) cannot get a token from it through the user's browser.
 */
import { request as httpRequest } from 'node:http'

import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'

import { createDevProvider, type DevProvider } from '../../src/testing/index.js'
import { JOB, ORDERS, startDevProvider } from './dev-provider-fixtures.js'

const VALID = {
  users: [{ sub: 'alice' }],
  resources: { [ORDERS]: { scopes: ['orders:read'] } },
  clients: [{ ...JOB, scopes: ['orders:read'] }],
}

afterEach(() => {
  vi.unstubAllEnvs()
})

describe('createDevProvider under NODE_ENV=production', () => {
  it('refuses to start, saying why and what to do', async () => {
    vi.stubEnv('NODE_ENV', 'production')
    await expect(createDevProvider(VALID)).rejects.toThrow(
      new TypeError(
        'createDevProvider(options): NODE_ENV is "production": the development provider signs in anyone and issues tokens to every client it lists, so it does not start there. Remove it from production code, or set allowInProduction: true for a deployment that is a demo',
      ),
    )
  })

  it('starts with allowInProduction: true', async () => {
    vi.stubEnv('NODE_ENV', 'production')
    const provider = await createDevProvider({ ...VALID, allowInProduction: true })
    expect((await fetch(`${provider.issuer}/.well-known/openid-configuration`)).status).toBe(200)
    await provider.close()
  })

  it.each(['development', 'test', ''])('starts under NODE_ENV=%j', async (value) => {
    vi.stubEnv('NODE_ENV', value)
    const provider = await createDevProvider(VALID)
    await provider.close()
  })

  it('refuses an allowInProduction that is not a boolean', async () => {
    await expect(
      createDevProvider({ ...VALID, allowInProduction: 'yes' } as never),
    ).rejects.toThrow('createDevProvider(options): "allowInProduction" must be a boolean')
  })
})

/** A token request sent with exactly this `Host` (or none); the status and the body's text. */
function tokenRequestWithHost(
  provider: DevProvider,
  host: string | undefined,
): Promise<{ status: number; body: string }> {
  const target = new URL(provider.tokenEndpoint)
  const form = new URLSearchParams({ grant_type: 'client_credentials', scope: 'orders:read' })
  const basic = Buffer.from(`${JOB.clientId}:${JOB.clientSecret}`).toString('base64')
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      {
        host: '127.0.0.1',
        port: target.port,
        path: target.pathname,
        method: 'POST',
        // Node sets Host itself unless told not to.
        setHost: false,
        headers: {
          ...(host === undefined ? {} : { host }),
          authorization: `Basic ${basic}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
      },
      (response) => {
        let body = ''
        response.setEncoding('utf8')
        response.on('data', (chunk: string) => {
          body += chunk
        })
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }))
      },
    )
    outgoing.on('error', reject)
    outgoing.end(form.toString())
  })
}

describe('createDevProvider, by Host', () => {
  let provider: DevProvider
  let port: string
  beforeAll(async () => {
    provider = await startDevProvider()
    port = new URL(provider.url).port
  })
  afterAll(() => provider?.close())

  it.each([['127.0.0.1'], ['localhost'], ['LocalHost'], ['[::1]']])(
    'issues a token to a request addressed to %s on its port',
    async (name) => {
      const answer = await tokenRequestWithHost(provider, `${name}:${port}`)
      expect(answer.status).toBe(200)
      expect(JSON.parse(answer.body)).toHaveProperty('access_token')
    },
  )

  it.each([
    ['another site’s name (DNS rebinding)', () => `rebind.attacker.example:${port}`],
    ['another site’s name without a port', () => 'rebind.attacker.example'],
    ['loopback on another port', () => '127.0.0.1:1'],
    ['loopback without the port', () => '127.0.0.1'],
    ['a name that starts like localhost', () => `localhost.attacker.example:${port}`],
  ])('answers 421 without serving to a request addressed to %s', async (_name, host) => {
    const answer = await tokenRequestWithHost(provider, host())
    expect(answer.status).toBe(421)
    expect(answer.body).not.toContain('access_token')
    expect(JSON.parse(answer.body)).toMatchObject({ error: 'invalid_request' })
  })

  it('serves no token to a request without Host (Node answers 400 before the provider sees it)', async () => {
    const answer = await tokenRequestWithHost(provider, undefined)
    expect(answer.status).toBe(400)
    expect(answer.body).not.toContain('access_token')
  })

  it('serves no page or document under another name either', async () => {
    for (const path of ['/.well-known/openid-configuration', '/protocol/openid-connect/certs']) {
      const response = await new Promise<number>((resolve, reject) => {
        httpRequest(
          {
            host: '127.0.0.1',
            port,
            path: `/realms/${provider.realm}${path}`,
            setHost: false,
            headers: { host: `rebind.attacker.example:${port}` },
          },
          (answer) => {
            answer.resume()
            resolve(answer.statusCode ?? 0)
          },
        )
          .on('error', reject)
          .end()
      })
      expect(response).toBe(421)
    }
  })
})
