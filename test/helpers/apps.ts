/**
 * Real Express (4, 5) and Koa (2, 3) apps protected by tollgate, for supertest. Every app serves
 * the same routes so one behaviour suite can run against all of them.
 */
import type { Server } from 'node:http'
import { createServer } from 'node:http'

import express5 from 'express'
import express4 from 'express4'
import Koa3 from 'koa'
import Koa2 from 'koa2'

import * as expressAdapter from '../../adapters/express/index.js'
import * as koaAdapter from '../../adapters/koa/index.js'
import type { Gate } from '../../src/gate/gate.js'
import type { GateOptions } from '../../src/gate/options.js'
import type { Admission } from '../../src/types.js'

/** Where the apps mount the back-channel logout endpoint, when the options have `revocation.callbacks`. */
export const LOGOUT_PATH = '/backchannel-logout'
/** Where the apps mount Keycloak's push not-before endpoint (`{adminUrl}/k_push_not_before`). */
export const PUSH_PATH = '/keycloak/k_push_not_before'

/** A protected app's server, with the gate behind its middleware for operations tests. */
export type ProtectedServer = Server & { readonly gate: Gate }
export type AppFactory = (options: GateOptions) => ProtectedServer

/** What every protected route answers: enough of `auth` to assert on, never the token. */
function describeAuth(auth: Admission | undefined) {
  if (auth === undefined) return { authenticated: false }
  return {
    authenticated: true,
    subject: auth.subject,
    issuer: auth.issuer,
    clientId: auth.clientId,
    tenant: auth.tenant,
    plan: auth.plan,
    scopes: auth.scopes,
  }
}

function expressApp(express: typeof express5): AppFactory {
  return (options) => {
    const app = express()
    // A body parser before the gate, as applications have: lets the gate see a token in the body.
    app.use(express.urlencoded({ extended: false }))
    const auth = expressAdapter.tollgate(options)
    // Provider callbacks come before the gate: the provider sends no bearer token.
    if (options.revocation?.callbacks !== undefined) {
      app.post(LOGOUT_PATH, auth.backchannelLogout())
      app.post(PUSH_PATH, auth.keycloakPushNotBefore())
    }
    app.use(auth)
    app.get('/api/v1/billing/subscriptions', (req, res) => {
      res.json(describeAuth(req.auth))
    })
    app.get('/scoped', auth.requireScopes('billing:read'), (req, res) => {
      res.json(describeAuth(req.auth))
    })
    app.get('/any-scope', auth.requireAnyScope('billing:read', 'billing:admin'), (req, res) => {
      res.json(describeAuth(req.auth))
    })
    app.get('/realm-role', auth.requireRealmRoles('admin'), (req, res) => {
      res.json(describeAuth(req.auth))
    })
    app.get('/client-role', auth.requireClientRoles('office', 'editor'), (req, res) => {
      res.json(describeAuth(req.auth))
    })
    app.post('/api/v1/billing/subscriptions', (req, res) => {
      res.json(describeAuth(req.auth))
    })
    app.get('/throws', () => {
      throw new Error('handler failure')
    })
    // Express's own error handler would answer HTML; this one keeps the framework-mode body JSON.
    app.use(
      (
        error: { status?: number; headers?: Record<string, string>; code?: string },
        _req: express5.Request,
        res: express5.Response,
        _next: express5.NextFunction,
      ) => {
        res
          .status(error.status ?? 500)
          .set(error.headers ?? {})
          .json({ handledBy: 'app', code: error.code ?? 'unknown' })
      },
    )
    return Object.assign(createServer(app), { gate: auth.gate })
  }
}

function formBody(Koa: typeof Koa3) {
  const middleware: Koa3.Middleware = async (ctx, next) => {
    if (ctx.is('application/x-www-form-urlencoded')) {
      const chunks: Buffer[] = []
      for await (const chunk of ctx.req) chunks.push(chunk as Buffer)
      ;(ctx.request as { body?: unknown }).body = Object.fromEntries(
        new URLSearchParams(Buffer.concat(chunks).toString()),
      )
    }
    await next()
  }
  void Koa
  return middleware
}

function koaApp(Koa: typeof Koa3): AppFactory {
  return (options) => {
    const app = new Koa()
    app.silent = true
    app.use(async (ctx, next) => {
      try {
        await next()
      } catch (caught) {
        const error = caught as { status?: number; headers?: Record<string, string>; code?: string }
        if (error.code === undefined || !String(error.code).startsWith('ERR_')) throw caught
        ctx.status = error.status ?? 500
        ctx.set(error.headers ?? {})
        ctx.body = { handledBy: 'app', code: error.code }
      }
    })
    app.use(formBody(Koa))
    const auth = koaAdapter.tollgate(options)
    if (options.revocation?.callbacks !== undefined) {
      const callbacks: Record<string, Koa3.Middleware> = {
        [LOGOUT_PATH]: auth.backchannelLogout(),
        [PUSH_PATH]: auth.keycloakPushNotBefore(),
      }
      app.use((ctx, next) => {
        const callback = ctx.method === 'POST' ? callbacks[ctx.path] : undefined
        return callback === undefined ? next() : callback(ctx, next)
      })
    }
    app.use(auth)
    const routes: Record<string, Koa3.Middleware<koaAdapter.TollgateState>[]> = {
      'GET /api/v1/billing/subscriptions': [],
      'POST /api/v1/billing/subscriptions': [],
      'GET /scoped': [auth.requireScopes('billing:read')],
      'GET /any-scope': [auth.requireAnyScope('billing:read', 'billing:admin')],
      'GET /realm-role': [auth.requireRealmRoles('admin')],
      'GET /client-role': [auth.requireClientRoles('office', 'editor')],
    }
    app.use(async (ctx: Koa3.ParameterizedContext<koaAdapter.TollgateState>, next) => {
      const guards = routes[`${ctx.method} ${ctx.path}`]
      if (ctx.path === '/throws') throw new Error('handler failure')
      if (guards === undefined) return next()
      let index = 0
      const run = async (): Promise<void> => {
        const guard = guards[index++]
        if (guard !== undefined) return guard(ctx, run)
        ctx.body = describeAuth(ctx.state.auth)
      }
      await run()
    })
    return Object.assign(createServer(app.callback()), { gate: auth.gate })
  }
}

/** Every framework major tollgate supports, by name. */
export const APPS: ReadonlyArray<readonly [string, AppFactory]> = [
  ['express 5', expressApp(express5)],
  ['express 4', expressApp(express4 as unknown as typeof express5)],
  ['koa 3', koaApp(Koa3)],
  ['koa 2', koaApp(Koa2 as unknown as typeof Koa3)],
]
