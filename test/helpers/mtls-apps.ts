/**
 * Every adapter as certificate-bound tokens meet it: the Node adapters of test/helpers/apps.ts
 * and NestJS on both platforms on their own sockets, Hono as `@hono/node-server` serves it (the
 * socket in `c.env.incoming`), and the Fetch adapter told of the socket (`handle(request, {
 * socket })`). Each factory returns a `node:http` server; `httpsServerOf()` moves it onto TLS.
 */
import { createServer } from 'node:http'

import { Hono } from 'hono'

import * as fetchAdapter from '../../adapters/fetch/index.js'
import * as honoAdapter from '../../adapters/hono/index.js'
import { APPS, type AppFactory, FETCH_HOSTS } from './apps.js'
import { fetchListener } from './fetch-server.js'
import { NEST_APPS } from './nest-apps.js'

const ROUTE = '/api/v1/billing/subscriptions'

/** The Hono app as @hono/node-server runs it: `app.fetch(request, { incoming, outgoing })`. */
export const honoOnNodeServer: AppFactory = (options) => {
  const app = new Hono<honoAdapter.TollgateEnv>()
  const auth = honoAdapter.tollgate(options)
  app.use(auth)
  app.get(ROUTE, (c) => c.json({ authenticated: c.get('auth') !== undefined }))
  const server = createServer((req, res) =>
    fetchListener((request) => app.fetch(request, { incoming: req, outgoing: res }))(req, res),
  )
  return Object.assign(server, { gate: auth.gate })
}

/** The Fetch adapter told of the connection: `handle(request, { socket })`. */
export const fetchWithSocket: AppFactory = (options) => {
  const auth = fetchAdapter.tollgate(options)
  const server = createServer((req, res) =>
    fetchListener(async (request) => {
      const admitted = await auth.handle(request, { socket: req.socket })
      if (admitted.response !== undefined) return admitted.response
      return Response.json({ authenticated: admitted.auth !== undefined })
    })(req, res),
  )
  return Object.assign(server, { gate: auth.gate })
}

/** Every Node adapter on its own socket, NestJS on both platforms, Hono and Fetch as above. */
export const MTLS_APPS: ReadonlyArray<readonly [string, AppFactory]> = [
  ...APPS.filter(([name]) => !FETCH_HOSTS.has(name)),
  ...NEST_APPS,
  ['hono (@hono/node-server)', honoOnNodeServer],
  ['fetch (handle with socket)', fetchWithSocket],
]
