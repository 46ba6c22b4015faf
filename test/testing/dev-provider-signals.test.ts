/**
 * The development provider as a Shared Signals transmitter: a user who signs out at its
 * end-session page, or whose account an administrator disables, is refused by a gate whose
 * signal receiver the provider's transmitter pushes to.
 */
import { createHash, randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'

import type { TollgateError } from '../../src/errors.js'
import { createGate, type Gate } from '../../src/gate/gate.js'
import type { SignalEvent } from '../../src/signals/events.js'
import { createSignalPoller } from '../../src/signals/poll.js'
import { createSignalReceiver, type SignalReceiver } from '../../src/signals/receiver.js'
import { followAuthorization } from '../../src/testing/dev-authorize.js'
import { createDevProvider, type DevProvider } from '../../src/testing/index.js'
import {
  createTestTransmitter,
  SSF_EVENTS,
  type TestTransmitter,
} from '../../src/testing/ssf-transmitter.js'
import { keycloak } from '../../src/token/issuers.js'
import { ORDERS, USERS, WEB } from './dev-provider-fixtures.js'

const AUDIENCE = 'https://gateway.example'
const PUSH_AUTHORIZATION = 'Bearer dev-provider-push-secret'
const REDIRECT = 'http://127.0.0.1:4999/callback'

let server: ReturnType<typeof createServer>
let transmitter: TestTransmitter
let provider: DevProvider
let gate: Gate
let receiver: SignalReceiver
const events: SignalEvent[] = []

beforeAll(async () => {
  let handle: ((req: IncomingMessage, res: ServerResponse) => void) | undefined
  server = createServer((req, res) => handle?.(req, res))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  transmitter = await createTestTransmitter({
    audience: AUDIENCE,
    delivery: {
      method: 'push',
      endpoint: `http://127.0.0.1:${port}/ssf`,
      authorization: PUSH_AUTHORIZATION,
    },
  })
  provider = await createDevProvider({
    users: USERS,
    resources: { [ORDERS]: { audience: 'orders', scopes: ['orders:read'] } },
    clients: [{ ...WEB, redirectUris: [REDIRECT], scopes: ['orders:read'] }],
    ssf: transmitter,
  })
  gate = createGate({
    issuers: keycloak({ authUrl: provider.url, realms: ['dev'] }),
    audience: 'orders',
    revocation: {},
  })
  receiver = createSignalReceiver({
    gate,
    transmitter: { issuer: transmitter.issuer },
    audience: AUDIENCE,
    authorization: PUSH_AUTHORIZATION,
    onEvent: (event) => events.push(event),
  })
  handle = (req, res) => {
    receiver.push({ headers: req.headers, method: req.method, stream: req }).then((answer) => {
      res.writeHead(answer.status, answer.headers).end(answer.body)
    })
  }
})

afterAll(async () => {
  receiver.close()
  await gate.close()
  await provider.close()
  await transmitter.close()
  await new Promise((resolve) => server.close(resolve))
})

/** `'admitted'` or the refusal's reason. */
const decided = (token: string) =>
  gate.check({ headers: { authorization: `Bearer ${token}` } }).then(
    () => 'admitted',
    (error: TollgateError) => error.reason ?? error.code,
  )

/** Signs `user` in at the provider as a browser would; the provider's cookies. */
async function signIn(user: string, at = provider): Promise<Map<string, string>> {
  const verifier = randomBytes(32).toString('base64url')
  const url = new URL(at.authorizationEndpoint)
  url.search = new URLSearchParams({
    client_id: WEB.clientId,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid',
    state: 'state-1',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  }).toString()
  const cookies = new Map<string, string>()
  const back = await followAuthorization(at.issuer, url.href, user, cookies)
  expect(back.searchParams.get('code')).toBeTypeOf('string')
  return cookies
}

/** Opens the end-session page with the provider's cookies and presses "Sign out". */
async function signOutAtPage(cookies: Map<string, string>, at = provider): Promise<void> {
  const keep = (response: Response) => {
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';', 1)
      cookies.set(pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1))
    }
  }
  const header = () => [...cookies].map(([name, value]) => `${name}=${value}`).join('; ')
  const page = await fetch(at.endSessionEndpoint, { headers: { cookie: header() } })
  keep(page)
  const html = await page.text()
  expect(page.status, html).toBe(200)
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1] ?? ''
  const action = /action="([^"]+)"/.exec(html)?.[1] ?? ''
  const confirmed = await fetch(new URL(action, at.endSessionEndpoint), {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: header(), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ xsrf, logout: 'yes' }),
  })
  await confirmed.body?.cancel()
  expect(confirmed.status).toBeLessThan(400)
}

const tokenOf = (user: string) =>
  provider.accessTokenFor(user, { clientId: WEB.clientId, resource: ORDERS })

describe('the development provider as a Shared Signals transmitter', () => {
  it('a user who signs out at the provider’s page is refused: CAEP session-revoked is pushed to the receiver', async () => {
    const cookies = await signIn('alice')
    const alice = await tokenOf('alice')
    const bob = await tokenOf('bob')
    expect(await decided(alice)).toBe('admitted')
    await signOutAtPage(cookies)
    // The SET is pushed once the page answered; the gate refuses as soon as it was applied.
    await vi.waitFor(async () => expect(await decided(alice)).toBe('revoked'))
    expect(await decided(bob)).toBe('admitted')
    expect(
      events.some(
        (event) => event.type === 'signal_applied' && event.event === SSF_EVENTS.sessionRevoked,
      ),
    ).toBe(true)
  })

  it('disableAccount(sub) sends RISC account-disabled: the user’s tokens are refused, others’ are not', async () => {
    const bob = await tokenOf('bob')
    expect(await decided(bob)).toBe('admitted')
    await provider.disableAccount('bob')
    expect(await decided(bob)).toBe('revoked')
    // Only the signal is sent: the user can still sign in at the provider.
    await signIn('bob')
  })

  it('a sign-out whose receiver is down still signs the user out at the page', async () => {
    const down = await createTestTransmitter({
      audience: AUDIENCE,
      delivery: { method: 'push', endpoint: 'http://127.0.0.1:1/ssf', authorization: 'Bearer x' },
    })
    const alone = await createDevProvider({
      users: USERS,
      resources: { [ORDERS]: { audience: 'orders', scopes: ['orders:read'] } },
      clients: [{ ...WEB, redirectUris: [REDIRECT], scopes: ['orders:read'] }],
      ssf: down,
    })
    try {
      await signOutAtPage(await signIn('alice', alone), alone)
    } finally {
      await alone.close()
      await down.close()
    }
  })

  it('disableAccount() refuses an unknown user, and a provider without a transmitter', async () => {
    await expect(provider.disableAccount('mallory')).rejects.toThrow(/not a configured user/)
    const plain = await createDevProvider({
      users: USERS,
      resources: { [ORDERS]: { audience: 'orders', scopes: ['orders:read'] } },
      clients: [],
    })
    try {
      await expect(plain.disableAccount('alice')).rejects.toThrow(/no transmitter/)
    } finally {
      await plain.close()
    }
  })

  it('with a transmitter per receiver’s stream (ssf: [push, poll]), a sign-out and a disabled account reach every receiver', async () => {
    // A provider keeps one stream per receiver (SSF 1.0 §8.1.1): the receiver above by push, and
    // a second product's by poll (RFC 8936).
    const polled = await createTestTransmitter({ audience: 'https://office.example' })
    const both = await createDevProvider({
      users: USERS,
      resources: { [ORDERS]: { audience: 'orders', scopes: ['orders:read'] } },
      clients: [{ ...WEB, redirectUris: [REDIRECT], scopes: ['orders:read'] }],
      ssf: [transmitter, polled],
    })
    const office = createGate({
      issuers: keycloak({ authUrl: both.url, realms: ['dev'] }),
      audience: 'orders',
      revocation: {},
    })
    const officeReceiver = createSignalReceiver({
      gate: office,
      transmitter: { issuer: polled.issuer },
      audience: 'https://office.example',
    })
    const poller = createSignalPoller({ receiver: officeReceiver, endpoint: polled.pollEndpoint })
    poller.start()
    const atOffice = (token: string) =>
      office.check({ headers: { authorization: `Bearer ${token}` } }).then(
        () => 'admitted',
        (error: TollgateError) => error.reason ?? error.code,
      )
    // The receiver above judges only its own provider's users: it receives these SETs, verified.
    const from = events.length
    const pushedFor = (event: string) =>
      events.slice(from).some((seen) => seen.type === 'signal_received' && seen.event === event)
    try {
      const tokenAt = (user: string) =>
        both.accessTokenFor(user, { clientId: WEB.clientId, resource: ORDERS })
      const alice = await tokenAt('alice')
      const bob = await tokenAt('bob')
      expect(await atOffice(alice)).toBe('admitted')

      await signOutAtPage(await signIn('alice', both), both)
      await vi.waitFor(() => expect(pushedFor(SSF_EVENTS.sessionRevoked)).toBe(true))
      await vi.waitFor(async () => expect(await atOffice(alice)).toBe('revoked'))
      expect(await atOffice(bob)).toBe('admitted')

      await both.disableAccount('bob')
      expect(pushedFor(SSF_EVENTS.accountDisabled)).toBe(true)
      await vi.waitFor(async () => expect(await atOffice(bob)).toBe('revoked'))
      await vi.waitFor(() => expect(polled.acknowledged.size).toBe(2))
    } finally {
      await poller.stop()
      officeReceiver.close()
      await office.close()
      await both.close()
      await polled.close()
    }
  })

  it('refuses an ssf option that is not a transmitter, or a list holding one', async () => {
    await expect(
      createDevProvider({
        users: USERS,
        resources: { [ORDERS]: { audience: 'orders', scopes: ['orders:read'] } },
        clients: [],
        ssf: { url: 'http://127.0.0.1:1' } as never,
      }),
    ).rejects.toThrow(/"ssf" must be a transmitter of createTestTransmitter/)
    await expect(
      createDevProvider({
        users: USERS,
        resources: { [ORDERS]: { audience: 'orders', scopes: ['orders:read'] } },
        clients: [],
        ssf: [transmitter, { url: 'http://127.0.0.1:1' } as never],
      }),
    ).rejects.toThrow(/"ssf\[1\]" must be a transmitter of createTestTransmitter/)
  })
})
