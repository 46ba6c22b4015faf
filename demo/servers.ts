/**
 * The demo platform, all on loopback: a development identity provider (Keycloak-shaped), the
 * platform gateway (Express, audience `gateway`, per-tenant limits) and the office product (Koa,
 * audience `office`). Used by `npm start`, by the walkthrough and by the smoke test.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

import express from 'express'
import Koa from 'koa'

import * as gatewayAuth from '../adapters/express/index.js'
import * as officeAuth from '../adapters/koa/index.js'
import { keycloak } from '../src/index.js'
import { createTestIssuer, type TestIssuer } from '../src/testing/index.js'

export const REALM = 'platform'
/** A backend integration registered for the Client Credentials flow (a demo secret, not a real one). */
export const SERVICE_CLIENT = { clientId: 'billing-sync', clientSecret: 'demo-only-secret' }

export interface DemoPorts {
  readonly issuer: number
  readonly gateway: number
  readonly office: number
}

export interface Demo {
  readonly issuer: TestIssuer
  readonly gatewayUrl: string
  readonly officeUrl: string
  close(): Promise<void>
}

async function listen(server: Server, port: number): Promise<string> {
  const bind = (candidate: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(candidate, '127.0.0.1', () => {
        server.off('error', reject)
        resolve()
      })
    })
  try {
    await bind(port)
  } catch (error) {
    // A taken default port should not stop a newcomer's demo: take any free port instead.
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || port === 0) throw error
    await bind(0)
  }
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

function gatewayApp(authUrl: string): Server {
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
  app.use(
    officeAuth.tollgate({
      issuers: keycloak({ authUrl, realms: [REALM] }),
      audience: 'office',
      realm: 'office',
    }),
  )
  const writeRecords = officeAuth.requireScopes('office:records:write')
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
  const issuer = await createTestIssuer({
    realms: [REALM],
    algorithms: ['RS256', 'ES256'],
    audience: 'gateway',
    port: ports.issuer ?? 0,
    clients: [{ ...SERVICE_CLIENT, audience: 'gateway', scope: 'billing:read', tenant: 'acme' }],
  })
  const gateway = gatewayApp(issuer.url)
  const office = officeApp(issuer.url)
  const gatewayUrl = await listen(gateway, ports.gateway ?? 0)
  const officeUrl = await listen(office, ports.office ?? 0)
  return {
    issuer,
    gatewayUrl,
    officeUrl,
    async close() {
      gateway.closeAllConnections()
      office.closeAllConnections()
      await Promise.all([
        new Promise((resolve) => gateway.close(resolve)),
        new Promise((resolve) => office.close(resolve)),
        issuer.close(),
      ])
    },
  }
}
