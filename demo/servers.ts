/**
 * The demo platform, all on loopback: a development identity provider (Keycloak-shaped), the
 * platform gateway (Express, audience `gateway`, per-tenant limits) and the office product (Koa,
 * audience `office`), both refusing a user's tokens once the sign-in provider's Shared Signals say
 * so (`signals.ts`: pushed to the gateway, polled by the office). Used by `npm start`, by the
 * walkthrough and by the smoke test.
 */
import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

import express from 'express'
import Koa from 'koa'

import { keycloak, type SignalEvent } from 'tollgate'
import {
  createAuthorizedFetch,
  createTokenExchange,
  createTokenSource,
  isTokenSourceError,
  type TokenExchange,
  type TokenSource,
  type TokenSourceEvent,
} from 'tollgate/client'
import * as gatewayAuth from 'tollgate/express'
import * as officeAuth from 'tollgate/koa'
import { createMemorySessionStore, type SignInContext } from 'tollgate/signin'
import {
  createDevProvider,
  createTestIssuer,
  type DevProvider,
  type DevUser,
  type TestIssuer,
} from 'tollgate/testing'

import {
  GATEWAY_SIGNALS,
  gatewayReceiver,
  officeReceiver,
  type ProviderStreams,
  startSignalStreams,
} from './signals.js'

/**
 * Runs `start` without oidc-provider's "Unsupported runtime" warning on Node 20 (the sign-in
 * provider, `createDevProvider()`, runs on oidc-provider): the demo supports Node 20, and
 * `npm start` prints one line when it fails.
 */
async function quietly<T>(start: () => Promise<T>): Promise<T> {
  const warn = console.warn
  console.warn = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && args[0].includes('oidc-provider WARNING')) return
    warn(...args)
  }
  try {
    return await start()
  } finally {
    console.warn = warn
  }
}

export const REALM = 'platform'
/** A backend integration registered for the Client Credentials flow (a demo secret, not a real one). */
export const SERVICE_CLIENT = { clientId: 'billing-sync', clientSecret: 'demo-only-secret' }
/** The gateway's own client, for calls to the office product (a demo secret, not a real one). */
export const GATEWAY_CLIENT = {
  clientId: 'gateway-office',
  clientSecret: 'demo-only-gateway-secret',
}

/**
 * The gateway's client at the sign-in provider, which may exchange a user's gateway token for an
 * office token on their behalf (token exchange, RFC 8693; a demo secret, not a real one).
 */
export const GATEWAY_EXCHANGE_CLIENT = {
  clientId: 'gateway',
  clientSecret: 'demo-only-gateway-exchange-secret',
}

/** The office web front's client at the sign-in provider (a demo secret, not a real one). */
export const OFFICE_WEB_CLIENT = {
  clientId: 'office-web',
  clientSecret: 'demo-only-office-web-secret',
}
/**
 * The people the sign-in provider's page offers. Their tokens carry the platform's tenant claim,
 * which the gateway's limits key on (globex: the pro plan).
 */
export const DEMO_USERS: readonly DevUser[] = [
  {
    sub: 'alice',
    name: 'Alice Example',
    email: 'alice@example.com',
    tokenClaims: { tenant: 'globex' },
  },
  { sub: 'bob', name: 'Bob Example', email: 'bob@example.com', tokenClaims: { tenant: 'globex' } },
]

/** The APIs of the platform, by resource indicator: what the sign-in provider issues tokens for. */
const PLATFORM_RESOURCES = {
  'urn:platform:gateway': { audience: 'gateway', scopes: ['billing:read'] },
  'urn:platform:office': {
    audience: 'office',
    scopes: ['office:records:read', 'office:records:write'],
  },
}

/**
 * The time the gateway's token source sees: the real time, moved forward by the walkthrough to
 * show a renewal without waiting minutes. `npm start` never moves it.
 */
export interface DemoClock {
  now(): number
  advance(ms: number): void
}

function demoClock(): DemoClock {
  let offsetMs = 0
  return {
    now: () => Date.now() + offsetMs,
    advance(ms) {
      offsetMs += ms
    },
  }
}

export interface DemoPorts {
  readonly issuer: number
  readonly gateway: number
  readonly office: number
  readonly signIn: number
}

/** What each product's signal receiver reported (`signal_applied`, …): never a token. */
export interface DemoSignalEvents {
  readonly gateway: readonly SignalEvent[]
  readonly office: readonly SignalEvent[]
}

export interface Demo {
  readonly issuer: TestIssuer
  /** The sign-in provider's Shared Signals streams: pushing to the gateway, polled by the office. */
  readonly streams: ProviderStreams
  /** What the gateway's and the office's receivers reported. */
  readonly signalEvents: DemoSignalEvents
  /** The provider users sign in at (`createDevProvider()`: Keycloak-shaped, a sign-in page). */
  readonly signInProvider: DevProvider
  readonly gatewayUrl: string
  readonly officeUrl: string
  /** The gateway's office token source, its events (never a token) and its clock. */
  readonly officeTokens: {
    readonly source: TokenSource
    readonly events: readonly TokenSourceEvent[]
    readonly clock: DemoClock
  }
  close(): Promise<void>
}

/** A demo server could not listen because its port is taken. */
export class PortInUseError extends Error {
  readonly service: keyof DemoPorts
  readonly port: number

  constructor(service: keyof DemoPorts, port: number) {
    super(`port ${port} is in use`)
    this.service = service
    this.port = port
  }
}

/** Runs `start`, turning "address in use" into a {@link PortInUseError} naming the service. */
async function onPort<T>(service: keyof DemoPorts, port: number, start: () => Promise<T>) {
  try {
    return await start()
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new PortInUseError(service, port)
    }
    throw error
  }
}

function listen(server: Server, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject)
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
    })
  })
}

/** A product's Shared Signals: the provider's stream to it, what its receiver reports. */
interface ProductSignals {
  readonly streams: ProviderStreams
  readonly onEvent: (event: SignalEvent) => void
  /** Receives what to stop when the demo closes. */
  readonly onClose: (close: () => void | Promise<void>) => void
}

function gatewayApp(
  authUrls: readonly string[],
  officeUrl: () => string,
  officeTokens: TokenSource,
  exchange: TokenExchange,
  signals: ProductSignals,
): express.Express {
  // A backend call: the gateway asks the office product with its own token, for audience office.
  const officeFetch = createAuthorizedFetch(officeTokens)
  const app = express()
  app.disable('x-powered-by')
  const auth = gatewayAuth.tollgate({
    issuers: authUrls.flatMap((authUrl) => keycloak({ authUrl, realms: [REALM] })),
    audience: 'gateway',
    realm: 'gateway',
    tenant: { claim: 'tenant' },
    // Low on purpose, so the walkthrough shows one tenant limited while another is admitted.
    rateLimit: {
      plans: {
        free: [{ points: 5, durationSeconds: 60 }],
        pro: [{ points: 100, durationSeconds: 60 }],
      },
      defaultPlan: 'free',
      tenantPlans: { globex: 'pro' },
    },
    // auth.tokenFor(): the user's own token exchanged for an office token on their behalf.
    delegation: { exchange },
    // Fleet revocation, here in memory: what the provider's signals revoke.
    revocation: {},
  })
  // The sign-in provider's Shared Signals, pushed here: a user who signs out at its page, or
  // whom an administrator disables, is refused from the moment the SET arrives.
  const receiver = gatewayReceiver(auth.gate, signals.streams.gateway, signals.onEvent)
  signals.onClose(() => receiver.close())
  app.post(GATEWAY_SIGNALS.path, auth.sharedSignals(receiver))
  app.use(auth)
  // The user's office data, read on the user's behalf: their gateway token exchanged for an
  // office token naming them and the gateway as actor.
  app.get('/api/v1/office/my-namespaces', async (req, res) => {
    let officeToken: string
    try {
      officeToken = (await req.auth?.tokenFor({
        audience: 'office',
        scope: 'office:records:read',
      })) as string
    } catch (error) {
      // Typed: a token of another provider, a DPoP-bound token, the provider refusing.
      const code = isTokenSourceError(error) ? error.code : 'unknown'
      res.status(isTokenSourceError(error) && error.retryable ? 503 : 403).json({ error: code })
      return
    }
    const response = await fetch(`${officeUrl()}/api/namespaces`, {
      headers: { Accept: 'application/json', Authorization: `Bearer ${officeToken}` },
    })
    const body = (await response.json()) as Record<string, unknown>
    res.status(response.ok ? 200 : 502).json({ office: response.status, ...body })
  })
  app.get('/api/v1/office/namespaces', async (_req, res) => {
    try {
      const response = await officeFetch(`${officeUrl()}/api/namespaces`, {
        headers: { Accept: 'application/json' },
      })
      const body = (await response.json()) as Record<string, unknown>
      res.status(response.ok ? 200 : 502).json({ office: response.status, ...body })
    } catch {
      // The token source's typed error says whether to retry; the caller just sees 503.
      res.status(503).json({ error: 'temporarily_unavailable' })
    }
  })
  app.get('/api/v1/billing/subscriptions', (req, res) => {
    res.json({
      tenant: req.auth?.tenant,
      subscriptions: [{ id: 'sub_1', product: 'office', seats: 25, status: 'active' }],
    })
  })
  return app
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`)

/** The office web page: sign-in state, the user's office data and the gateway's billing answer. */
async function officePage(
  signin: SignInContext | undefined,
  officeUrl: string,
  gatewayUrl: string,
): Promise<string> {
  const user = signin?.user
  if (signin === undefined || user === undefined) {
    return page(
      '<p>You are not signed in.</p><p><a id="sign-in" href="/auth/login?returnTo=%2F">Sign in</a></p>',
    )
  }
  // The user's own tokens, one per product, each refreshed by tollgate/signin when due.
  const call = async (url: string, product: string) => {
    const response = await fetch(url, {
      headers: {
        Accept: 'application/json',
        Authorization: `Bearer ${await signin.accessToken(product)}`,
      },
    })
    return { status: response.status, body: (await response.json()) as Record<string, unknown> }
  }
  const office = await call(`${officeUrl}/api/namespaces`, 'office')
  const billing = await call(`${gatewayUrl}/api/v1/billing/subscriptions`, 'gateway')
  const namespaces = (office.body['namespaces'] as { name: string }[] | undefined) ?? []
  const name = String(user.claims['name'] ?? user.subject)
  return page(`<p>Signed in as <strong id="user">${escapeHtml(name)}</strong></p>
<h2>Namespaces (office API, your office token: ${office.status})</h2>
<ul id="namespaces">${namespaces.map((item) => `<li>${escapeHtml(item.name)}</li>`).join('')}</ul>
<h2>Billing (gateway, your gateway token: ${billing.status})</h2>
<pre id="billing">${escapeHtml(JSON.stringify(billing.body, null, 2))}</pre>
<form method="post" action="/auth/logout"><button id="sign-out" type="submit">Sign out</button></form>`)
}

function page(body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Office</title>
<style>body{font:16px system-ui,sans-serif;margin:2rem auto;max-width:40rem}pre{background:#f4f4f4;padding:1rem}</style>
</head><body><h1>Office</h1>
${body}
</body></html>`
}

interface OfficeSetup {
  readonly authUrls: readonly string[]
  readonly officeUrl: string
  readonly gatewayUrl: string
  readonly signInProvider: DevProvider
  readonly signals: ProductSignals
}

function officeApp(setup: OfficeSetup): ReturnType<Koa['callback']> {
  const app = new Koa<officeAuth.TollgateState & officeAuth.SignInState>()
  app.silent = true
  const auth = officeAuth.tollgate({
    issuers: setup.authUrls.flatMap((authUrl) => keycloak({ authUrl, realms: [REALM] })),
    audience: 'office',
    realm: 'office',
    // Tokens the gateway obtained for a user by token exchange name it in `act`: the gateway
    // may act for users here, nobody else.
    delegation: { allowedActors: [GATEWAY_EXCHANGE_CLIENT.clientId] },
    // The office's own revocation, in memory: what the provider's signals revoke.
    revocation: {},
  })
  // The sign-in provider's Shared Signals, polled: the provider cannot call this backend.
  const { receiver, poller } = officeReceiver(
    auth.gate,
    setup.signals.streams.office,
    setup.signals.onEvent,
  )
  setup.signals.onClose(async () => {
    await poller.stop()
    receiver.close()
  })
  // The web front: sign-in (Authorization Code + PKCE) with sessions in this process's memory.
  const signIn = officeAuth.signIn({
    issuer: keycloak({ authUrl: setup.signInProvider.url, realm: REALM }),
    discovery: true,
    clientId: OFFICE_WEB_CLIENT.clientId,
    // In production: fromEnv('OFFICE_WEB_SECRET') and keys: fromEnv('SIGNIN_KEYS').
    clientSecret: OFFICE_WEB_CLIENT.clientSecret,
    keys: [{ id: 'demo', secret: randomBytes(32) }],
    baseUrl: setup.officeUrl,
    scope: 'openid profile email',
    products: {
      office: { resource: 'urn:platform:office' },
      gateway: { resource: 'urn:platform:gateway' },
    },
    store: createMemorySessionStore(),
    // Plain http on loopback: the browser would drop a Secure cookie on http://127.0.0.1.
    session: { secureCookie: false },
  })
  app.use(signIn)
  app.use(async (ctx, next) => {
    if (ctx.method === 'GET' && ctx.path === '/') {
      ctx.type = 'html'
      ctx.body = await officePage(ctx.state.signin, setup.officeUrl, setup.gatewayUrl)
      return
    }
    await next()
  })
  // The API: bearer tokens only, audience office.
  app.use((ctx, next) => (ctx.path.startsWith('/api/') ? auth(ctx, next) : next()))
  const writeRecords = auth.requireScopes('office:records:write')
  app.use(async (ctx, next) => {
    if (ctx.method === 'GET' && ctx.path === '/api/namespaces') {
      const actor = ctx.state.auth?.actor?.subject
      ctx.body = {
        user: ctx.state.auth?.subject,
        ...(actor === undefined ? {} : { actor }),
        namespaces: [{ slug: 'crm', name: 'CRM' }],
      }
      return
    }
    if (ctx.method === 'POST' && ctx.path === '/api/namespaces/crm/modules/deals/records') {
      await writeRecords(ctx, async () => {
        ctx.status = 201
        ctx.body = { recordId: 'rec_1' }
      })
      return
    }
    await next()
  })
  return app.callback()
}

/** The office web front's registration at the sign-in provider. */
function officeWebClient(officeUrl: string) {
  return {
    ...OFFICE_WEB_CLIENT,
    redirectUris: [`${officeUrl}/auth/callback`],
    postLogoutRedirectUris: [`${officeUrl}/`],
    scopes: ['billing:read', 'office:records:read'],
  }
}

/** Starts the servers; ports default to free ones. */
export async function startDemo(ports: Partial<DemoPorts> = {}): Promise<Demo> {
  const issuer = await onPort('issuer', ports.issuer ?? 0, () =>
    createTestIssuer({
      realms: [REALM],
      algorithms: ['RS256', 'ES256'],
      audience: 'gateway',
      port: ports.issuer ?? 0,
      clients: [
        { ...SERVICE_CLIENT, audience: 'gateway', scope: 'billing:read', tenant: 'acme' },
        { ...GATEWAY_CLIENT, audience: 'office', scope: 'office:records:read' },
      ],
    }),
  )
  const clock = demoClock()
  const events: TokenSourceEvent[] = []
  const officeTokens = createTokenSource({
    issuer: keycloak({ authUrl: issuer.url, realm: REALM }),
    clientId: GATEWAY_CLIENT.clientId,
    // In production: fromEnv('GATEWAY_OFFICE_SECRET'), or a function reading a secrets manager.
    clientSecret: GATEWAY_CLIENT.clientSecret,
    scope: 'office:records:read',
    clock,
    onEvent: (event) => events.push(event),
  })
  let officeUrl = ''
  let gatewayUrl = ''
  let signInProvider: DevProvider | undefined
  let exchange: TokenExchange | undefined
  let streams: ProviderStreams | undefined
  const signalEvents = { gateway: [] as SignalEvent[], office: [] as SignalEvent[] }
  // The receivers and the office's poller, stopped before the streams close.
  const stops: Array<() => void | Promise<void>> = []
  // The gateway listens early too (its URL is where the provider's transmitter pushes).
  let gatewayHandler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => {
    res.writeHead(503).end()
  }
  const gateway = createServer((req, res) => gatewayHandler(req, res))
  // The office listens first (its URL is the sign-in client's redirect URI); it answers once built.
  let officeHandler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => {
    res.writeHead(503).end()
  }
  const office = createServer((req, res) => officeHandler(req, res))
  const closeServer = (server: Server | undefined) =>
    new Promise((resolve) => {
      server?.closeAllConnections()
      return server?.listening ? server.close(resolve) : resolve(undefined)
    })
  const close = async () => {
    officeTokens.close()
    exchange?.close()
    await Promise.all(stops.map((stop) => stop()))
    await Promise.all([
      closeServer(gateway),
      closeServer(office),
      issuer.close(),
      signInProvider?.close(),
      streams?.gateway.close(),
      streams?.office.close(),
    ])
  }
  try {
    officeUrl = await onPort('office', ports.office ?? 0, () => listen(office, ports.office ?? 0))
    gatewayUrl = await onPort('gateway', ports.gateway ?? 0, () =>
      listen(gateway, ports.gateway ?? 0),
    )
    streams = await startSignalStreams(gatewayUrl)
    const ssf = [streams.gateway, streams.office]
    signInProvider = await onPort('signIn', ports.signIn ?? 0, () =>
      quietly(() =>
        createDevProvider({
          realm: REALM,
          users: DEMO_USERS,
          resources: PLATFORM_RESOURCES,
          clients: [
            officeWebClient(officeUrl),
            {
              ...GATEWAY_EXCHANGE_CLIENT,
              scopes: ['office:records:read'],
              exchange: { from: ['urn:platform:gateway'], to: ['urn:platform:office'] },
            },
          ],
          port: ports.signIn ?? 0,
          // Sign-outs at its page and disabled accounts go out as Shared Signals, on a stream
          // per product.
          ssf,
        }),
      ),
    )
    const authUrls = [issuer.url, signInProvider.url]
    exchange = createTokenExchange({
      issuer: keycloak({ authUrl: signInProvider.url, realm: REALM }),
      // In production: fromEnv('GATEWAY_EXCHANGE_SECRET').
      ...GATEWAY_EXCHANGE_CLIENT,
    })
    const signalsOf = (product: keyof typeof signalEvents): ProductSignals => ({
      streams: streams as ProviderStreams,
      onEvent: (event) => signalEvents[product].push(event),
      onClose: (stop) => stops.push(stop),
    })
    gatewayHandler = gatewayApp(
      authUrls,
      () => officeUrl,
      officeTokens,
      exchange,
      signalsOf('gateway'),
    )
    officeHandler = officeApp({
      authUrls,
      officeUrl,
      gatewayUrl,
      signInProvider,
      signals: signalsOf('office'),
    })
  } catch (error) {
    await close()
    throw error
  }
  return {
    issuer,
    streams,
    signalEvents,
    signInProvider,
    gatewayUrl,
    officeUrl,
    officeTokens: { source: officeTokens, events, clock },
    close,
  }
}
