/**
 * The outgoing-request helper against a real resource server: a loopback HTTP server that checks
 * tokens with tollgate's gate (audience `office`) and can be told to refuse a token, as after a
 * revocation, with the gate's RFC 6750 challenge.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import { createAuthorizedFetch, createTokenSource } from '../../src/client/index.js'
import { bearerChallenge } from '../../src/errors.js'
import { createGate, type Gate, keycloak, renderError } from '../../src/index.js'
import { manualClock, SECRET, startPlatformProvider } from '../helpers/client-fixtures.js'
import type { RunningProvider } from '../helpers/oidc-provider.js'

let provider: RunningProvider
let office: Server
let gate: Gate
let officeUrl: string
const refused = new Set<string>()
let bareChallengeNext = false
let refuseAll = false
const seen: string[] = []

beforeAll(async () => {
  provider = await startPlatformProvider()
  gate = createGate({
    issuers: keycloak({ authUrl: provider.url, realms: ['acme'] }),
    audience: 'office',
  })
  office = createServer((req, res) => {
    const token = (req.headers.authorization ?? '').replace(/^Bearer /, '')
    seen.push(token)
    if (bareChallengeNext || refuseAll || refused.has(token)) {
      const error = bareChallengeNext ? undefined : 'invalid_token'
      bareChallengeNext = false
      res.writeHead(401, {
        'WWW-Authenticate': bearerChallenge('office', error, error && 'invalid token'),
      })
      res.end()
      return
    }
    gate.check({ headers: req.headers, url: req.url }).then(
      ({ auth }) => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ client: auth?.clientId }))
      },
      (error: unknown) => {
        const rendered = renderError(error)
        res.writeHead(rendered.status, rendered.headers).end(rendered.body)
      },
    )
  })
  await new Promise<void>((resolve) => office.listen(0, '127.0.0.1', resolve))
  officeUrl = `http://127.0.0.1:${(office.address() as AddressInfo).port}`
})
afterAll(async () => {
  office.closeAllConnections()
  await new Promise((resolve) => office.close(resolve))
  gate.close()
  await provider.close()
})
beforeEach(() => {
  refused.clear()
  refuseAll = false
  seen.length = 0
  provider.resetGrants()
})

function officeSource(clock = manualClock()) {
  return createTokenSource({
    issuer: keycloak({ authUrl: provider.url, realms: ['acme'] }),
    clientId: 'billing-sync',
    clientSecret: SECRET,
    resource: 'urn:platform:office',
    clock,
  })
}

describe('createAuthorizedFetch', () => {
  it('sends the source’s token as a Bearer token, and the office admits it', async () => {
    const officeFetch = createAuthorizedFetch(officeSource())
    const response = await officeFetch(`${officeUrl}/api/namespaces`)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ client: 'billing-sync' })
  })

  it('keeps the caller’s other headers', async () => {
    const officeFetch = createAuthorizedFetch(officeSource())
    const response = await officeFetch(`${officeUrl}/api`, {
      headers: { Accept: 'application/json' },
    })
    expect(response.status).toBe(200)
  })

  it('retries once with a new token after a 401 invalid_token', async () => {
    const source = officeSource()
    refused.add(await source.get())
    const response = await createAuthorizedFetch(source)(`${officeUrl}/api`)
    expect(response.status).toBe(200)
    expect(seen).toHaveLength(2)
    expect(seen[0]).not.toBe(seen[1])
    expect(provider.grantCount()).toBe(2)
  })

  it('does not retry a second time when the new token is refused too', async () => {
    const clock = manualClock()
    const source = officeSource(clock)
    // Every token is refused, and each request moves the clock past the source's 10-second
    // throttle on invalidate(): only the retry-once bound can stop the retries.
    refuseAll = true
    const officeFetch = createAuthorizedFetch(source, {
      fetch: (input, init) => {
        clock.advance(11_000)
        return fetch(input, init)
      },
    })
    const response = await officeFetch(`${officeUrl}/api`)
    expect(response.status).toBe(401)
    expect(seen).toHaveLength(2)
    expect(seen[0]).not.toBe(seen[1])
  })

  it('does not retry a 401 without error="invalid_token"', async () => {
    bareChallengeNext = true
    const response = await createAuthorizedFetch(officeSource())(`${officeUrl}/api`)
    expect(response.status).toBe(401)
    expect(seen).toHaveLength(1)
  })

  it('does not retry a request whose body was a one-shot stream', async () => {
    const source = officeSource()
    refused.add(await source.get())
    const body = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{}'))
        controller.close()
      },
    })
    const response = await createAuthorizedFetch(source)(`${officeUrl}/api`, {
      method: 'POST',
      body,
      duplex: 'half',
    } as RequestInit)
    expect(response.status).toBe(401)
    expect(seen).toHaveLength(1)
  })

  it('answers 401 at the office for a token obtained for the gateway', async () => {
    const gatewaySource = createTokenSource({
      issuer: keycloak({ authUrl: provider.url, realms: ['acme'] }),
      clientId: 'billing-sync',
      clientSecret: SECRET,
      resource: 'urn:platform:gateway',
    })
    const response = await createAuthorizedFetch(gatewaySource)(`${officeUrl}/api`)
    expect(response.status).toBe(401)
  })
})
