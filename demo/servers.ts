/**
 * The demo platform, all on loopback: a development identity provider (Keycloak-shaped), the
 * platform gateway (Express, audience `gateway`, per-tenant limits) and the office product (Koa,
 * audience `office`). Used by `npm start`, by the walkthrough and by the smoke test.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

import express from 'express'
import Koa from 'koa'

import { keycloak } from 'tollgate'
import {
  createAuthorizedFetch,
  createTokenSource,
  type TokenSource,
  type TokenSourceEvent,
} from 'tollgate/client'
import * as gatewayAuth from 'tollgate/express'
import * as officeAuth from 'tollgate/koa'
import { createTestIssuer, type TestIssuer } from 'tollgate/testing'

export const REALM = 'platform'
/** A backend integration registered for the Client Credentials flow (a demo secret, not a real one). */
export const SERVICE_CLIENT = { clientId: 'billing-sync', clientSecret: 'demo-only-secret' }
/** The gateway's own client, for calls to the office product (a demo secret, not a real one). */
export const GATEWAY_CLIENT = {
  clientId: 'gateway-office',
  clientSecret: 'demo-only-gateway-secret',
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
}

export interface Demo {
  readonly issuer: TestIssuer
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

function gatewayApp(authUrl: string, officeUrl: () => string, officeTokens: TokenSource): Server {
  // A backend call: the gateway asks the office product with its own token, for audience office.
  const officeFetch = createAuthorizedFetch(officeTokens)
  const app = express()
  app.disable('x-powered-by')
  app.use(
    gatewayAuth.tollgate({
      issuers: keycloak({ authUrl, realms: [REALM] }),
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
    }),
  )
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
  return createServer(app)
}

function officeApp(authUrl: string): Server {
  const app = new Koa<officeAuth.TollgateState>()
  app.silent = true
  const auth = officeAuth.tollgate({
    issuers: keycloak({ authUrl, realms: [REALM] }),
    audience: 'office',
    realm: 'office',
  })
  app.use(auth)
  const writeRecords = auth.requireScopes('office:records:write')
  app.use(async (ctx, next) => {
    if (ctx.method === 'GET' && ctx.path === '/api/namespaces') {
      ctx.body = { user: ctx.state.auth?.subject, namespaces: [{ slug: 'crm', name: 'CRM' }] }
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
  return createServer(app.callback())
}

/** Starts the three servers; ports default to free ones. */
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
  const gateway = gatewayApp(issuer.url, () => officeUrl, officeTokens)
  const office = officeApp(issuer.url)
  const close = async () => {
    officeTokens.close()
    gateway.closeAllConnections()
    office.closeAllConnections()
    await Promise.all([
      new Promise((resolve) => (gateway.listening ? gateway.close(resolve) : resolve(undefined))),
      new Promise((resolve) => (office.listening ? office.close(resolve) : resolve(undefined))),
      issuer.close(),
    ])
  }
  let gatewayUrl: string
  try {
    gatewayUrl = await onPort('gateway', ports.gateway ?? 0, () =>
      listen(gateway, ports.gateway ?? 0),
    )
    officeUrl = await onPort('office', ports.office ?? 0, () => listen(office, ports.office ?? 0))
  } catch (error) {
    await close()
    throw error
  }
  return {
    issuer,
    gatewayUrl,
    officeUrl,
    officeTokens: { source: officeTokens, events, clock },
    close,
  }
}
