/**
 * The Fetch application the runtime tests serve on Bun, Deno and workerd: the routes of the
 * contract suite's `fetch` app (test/helpers/apps.ts), with gates built from JSON so a launcher
 * can hand them over through the environment or a Workers binding. Nothing here may import
 * `node:http` or a test helper: it is bundled and run outside Node.
 *
 * @module
 */
import { keycloak, tollgate } from '../../adapters/fetch/index.js'
import type { Admission, GateOptions, RevokeOptions } from '../../src/index.js'
import { httpSharedStore } from '../limits/samples/http-shared-store.js'

/** One gate as JSON: a Keycloak-style issuer (the test issuer's URL) and the plain options. */
export interface RuntimeGateConfig {
  readonly authUrl: string
  readonly realms: readonly string[]
  readonly audience: string
  /** Further gate options that JSON can carry (tenant, rateLimit, realm, …). */
  readonly options?: Omit<GateOptions, 'issuers' | 'audience'>
  /**
   * The counter service of docs/stores.md: `options.rateLimit` then counts in it and
   * `options.dpop` remembers proofs in it, through the guide's HTTP `SharedStore`
   * (`rateLimit.store` and `dpop.replay.store`: `{ shared }`).
   */
  readonly sharedStore?: { readonly url: string; readonly secret: string }
  /**
   * The application's revocation records, as JSON `gate.revoke()` targets at this URL:
   * `options.revocation.load` then fetches them (with `reloadIntervalMs`, again and again).
   */
  readonly revocationRecords?: string
}

/** Gates by name: a request to `/<name>/<path>` is answered by gate `<name>` as `/<path>`. */
export interface RuntimeAppConfig {
  readonly gates: Readonly<Record<string, RuntimeGateConfig>>
}

/** Answered without any gate, so a launcher can tell when the server is up. */
export const READY_PATH = '/__ready'

const ROUTE_PATH = '/api/v1/billing/subscriptions'
const TWO_SCOPES_PATH = '/two-scopes'
const JSON_TYPE = { 'Content-Type': 'application/json; charset=utf-8' }

/** As the contract apps answer: enough of `auth` to assert on, never the token. */
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

function json(value: unknown, headers: Readonly<Record<string, string>> = {}): Response {
  return new Response(JSON.stringify(value), { status: 200, headers: { ...headers, ...JSON_TYPE } })
}

function isForm(contentType: string | null): boolean {
  return contentType?.split(';', 1)[0]?.trim().toLowerCase() === 'application/x-www-form-urlencoded'
}

type Handler = (request: Request) => Promise<Response>

/** One gate's routes, as the contract suite's `fetch` app has them. */
function gateApp(config: RuntimeGateConfig): Handler {
  const { sharedStore, options = {} } = config
  const shared =
    sharedStore === undefined ? undefined : httpSharedStore(sharedStore.url, sharedStore.secret)
  const { rateLimit, dpop, revocation } = options
  const records = config.revocationRecords
  const auth = tollgate({
    ...options,
    ...(records === undefined || revocation === undefined
      ? {}
      : {
          revocation: {
            ...revocation,
            load: async () => (await (await fetch(records)).json()) as RevokeOptions[],
          },
        }),
    ...(shared === undefined || rateLimit === undefined
      ? {}
      : { rateLimit: { ...rateLimit, store: { shared } } }),
    ...(shared === undefined || dpop === undefined
      ? {}
      : { dpop: { ...dpop, replay: { ...dpop.replay, store: { shared } } } }),
    issuers: keycloak({ authUrl: config.authUrl, realms: [...config.realms] }),
    audience: config.audience,
  })
  const describe = (_request: Request, user: Admission | undefined) => json(describeAuth(user))
  const guarded: Record<string, Handler> = {
    '/scoped': auth.withAuth(describe, { scopes: ['billing:read'] }),
    [TWO_SCOPES_PATH]: auth.withAuth(describe, { scopes: ['billing:read', 'billing:write'] }),
    '/any-scope': auth.withAuth(describe, {
      guards: [auth.requireAnyScope('billing:read', 'billing:admin')],
    }),
    '/realm-role': auth.withAuth(describe, { guards: [auth.requireRealmRoles('admin')] }),
    '/client-role': auth.withAuth(describe, {
      guards: [auth.requireClientRoles('office', 'editor')],
    }),
  }
  return async (request) => {
    const { pathname } = new URL(request.url)
    const guardedRoute = request.method === 'GET' ? guarded[pathname] : undefined
    if (guardedRoute !== undefined) return guardedRoute(request)
    const form = isForm(request.headers.get('content-type'))
    const body = form
      ? Object.fromEntries(new URLSearchParams(await request.clone().text()))
      : undefined
    const result = await auth.handle(request, { body })
    if (result.response !== undefined) return result.response
    if (pathname === '/throws') throw new Error('handler failure')
    if (pathname !== ROUTE_PATH) return new Response('Not Found', { status: 404 })
    const preflight = request.method === 'OPTIONS' ? { preflight: true } : {}
    return json({ ...preflight, ...describeAuth(result.auth) }, result.headers)
  }
}

/**
 * The Fetch handler over every configured gate. Gates are opened on the first request, not at
 * load: workerd refuses timers and I/O in a module's global scope.
 */
export function runtimeApp(config: RuntimeAppConfig): (request: Request) => Promise<Response> {
  let apps: Map<string, Handler> | undefined
  return async (request) => {
    const url = new URL(request.url)
    if (url.pathname === READY_PATH) return new Response('ready')
    apps ??= new Map(Object.entries(config.gates).map(([name, gate]) => [name, gateApp(gate)]))
    const slash = url.pathname.indexOf('/', 1)
    const app = slash === -1 ? undefined : apps.get(url.pathname.slice(1, slash))
    if (app === undefined) return new Response('Not Found', { status: 404 })
    url.pathname = url.pathname.slice(slash)
    try {
      return await app(new Request(url, request))
    } catch (caught) {
      const error = caught as { status?: number; headers?: Record<string, string>; code?: string }
      return new Response(JSON.stringify({ handledBy: 'app', code: error.code ?? 'unknown' }), {
        status: error.status ?? 500,
        headers: { ...(error.headers ?? {}), ...JSON_TYPE },
      })
    }
  }
}
