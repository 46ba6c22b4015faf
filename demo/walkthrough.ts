/**
 * The scripted walkthrough: every answer the platform gives, each with the request that earns it.
 * `runWalkthrough()` is also the demo's smoke test.
 */
import { createHash, randomBytes } from 'node:crypto'
import { pathToFileURL } from 'node:url'

import { keycloak } from 'tollgate'
import { createTokenExchange, createTokenSource, type TokenSourceEvent } from 'tollgate/client'
import type { DevProvider } from 'tollgate/testing'

import {
  type Demo,
  GATEWAY_EXCHANGE_CLIENT,
  OFFICE_WEB_CLIENT,
  REALM,
  SERVICE_CLIENT,
  startDemo,
} from './servers.js'

export interface Step {
  readonly title: string
  readonly expected: number
  readonly status: number
  readonly detail: string
}

async function call(url: string, token?: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers)
  headers.set('Accept', 'application/json')
  if (token !== undefined)
    headers.set('Authorization', token.startsWith('Bearer') ? token : `Bearer ${token}`)
  return fetch(url, { ...init, headers })
}

function describeResponse(response: Response, body: string): string {
  const challenge = response.headers.get('www-authenticate')
  const retryAfter = response.headers.get('retry-after')
  const limit = response.headers.get('ratelimit')
  return [
    body.length > 90 ? `${body.slice(0, 87)}...` : body,
    challenge && `WWW-Authenticate: ${challenge}`,
    limit && `RateLimit: ${limit}`,
    retryAfter && `Retry-After: ${retryAfter}`,
  ]
    .filter(Boolean)
    .join('\n      ')
}

/** A browser's cookies for one site, as `Set-Cookie` left them. */
class CookieJar {
  private readonly cookies = new Map<string, string>()
  keep(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';', 1)
      const equals = pair.indexOf('=')
      this.cookies.set(pair.slice(0, equals), pair.slice(equals + 1))
    }
  }
  get header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
  }
}

/**
 * What a person does in a browser: signs `user` in at the sign-in provider (for the office web
 * front), then opens its end-session page and presses "Sign out".
 */
async function signInAndOutAtProvider(
  provider: DevProvider,
  officeUrl: string,
  user: string,
): Promise<void> {
  const jar = new CookieJar()
  const verifier = randomBytes(32).toString('base64url')
  const authorization = new URL(provider.authorizationEndpoint)
  authorization.search = new URLSearchParams({
    client_id: OFFICE_WEB_CLIENT.clientId,
    redirect_uri: `${officeUrl}/auth/callback`,
    response_type: 'code',
    scope: 'openid',
    state: randomBytes(8).toString('base64url'),
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    // The provider's page signs this user in without the click.
    login_hint: user,
  }).toString()
  let next = authorization.href
  // Follow the provider's own redirects until it sends the browser back to the office.
  for (let hop = 0; hop < 10 && next.startsWith(provider.url); hop++) {
    const response = await fetch(next, { redirect: 'manual', headers: { cookie: jar.header } })
    jar.keep(response)
    await response.body?.cancel()
    next = new URL(response.headers.get('location') ?? '', next).href
  }
  const page = await fetch(provider.endSessionEndpoint, { headers: { cookie: jar.header } })
  jar.keep(page)
  const html = await page.text()
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1] ?? ''
  const action = /action="([^"]+)"/.exec(html)?.[1] ?? ''
  const confirmed = await fetch(new URL(action, provider.endSessionEndpoint), {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: jar.header, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ xsrf, logout: 'yes' }),
  })
  await confirmed.body?.cancel()
}

/** Calls `url` with `token` until it is refused, for at most `withinMs`; the last answer. */
async function refusedWithin(url: string, token: string, withinMs: number): Promise<Response> {
  const started = Date.now()
  for (;;) {
    const response = await call(url, token)
    if (response.status === 401 || Date.now() - started >= withinMs) return response
    await response.body?.cancel()
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Runs every step against a running demo and returns what each answered. */
export async function runWalkthrough(demo: Demo): Promise<Step[]> {
  const { issuer, gatewayUrl, officeUrl } = demo
  const billing = `${gatewayUrl}/api/v1/billing/subscriptions`
  const namespaces = `${officeUrl}/api/namespaces`
  const records = `${officeUrl}/api/namespaces/crm/modules/deals/records`
  const gatewayToken = await issuer.mint({
    tenant: 'acme',
    scope: 'openid profile email billing:read',
  })
  const officeToken = await issuer.mint({ aud: 'office', scope: 'openid office:records:read' })
  const expired = await issuer.mint({ tenant: 'acme', exp: Math.floor(Date.now() / 1000) - 60 })
  const [header, payload] = gatewayToken.split('.')
  const forged = `${header}.${payload}.${(await issuer.mint({ tenant: 'acme', sub: 'mallory' })).split('.')[2]}`
  const globex = await issuer.mint({ tenant: 'globex' })

  // A backend integration's token, from a token source (Client Credentials, openid-client).
  const serviceTokens = createTokenSource({
    issuer: keycloak({ authUrl: issuer.url, realms: [REALM] }),
    ...SERVICE_CLIENT,
    scope: 'billing:read',
  })
  const serviceToken = await serviceTokens.get()
  serviceTokens.close()

  // The gateway's backend call to the office product, with the gateway's own office token.
  const viaGateway = `${gatewayUrl}/api/v1/office/namespaces`
  const { events, clock, source: officeTokens } = demo.officeTokens
  const tokenEvents = (from: number) => () =>
    `token source: ${summarize(events.slice(from)) || 'no request (cached token reused)'}`
  let seenEvents = 0
  // The renewal runs in the background; wait for it (bounded, so a failure still ends the run).
  const renewed = async () => {
    for (let waited = 0; waited < 5000; waited += 5) {
      if (events.some((event) => event.type === 'token_renewed')) return
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  }
  // Each backend step shows what the token source did during it (its events, never a token).
  const officeCall = (
    title: string,
    around: { before?: () => void; after?: () => Promise<void> } = {},
  ) =>
    [
      title,
      200,
      async () => {
        around.before?.()
        seenEvents = events.length
        const response = await call(viaGateway, globex)
        await around.after?.()
        return response
      },
      () => tokenEvents(seenEvents)(),
    ] as const

  const steps: Array<readonly [string, number, () => Promise<Response>, (() => string)?]> = [
    ['gateway, user token for the gateway (tenant acme)', 200, () => call(billing, gatewayToken)],
    ['gateway, service token from Client Credentials', 200, () => call(billing, serviceToken)],
    ['gateway, no Authorization header', 401, () => call(billing)],
    ['gateway, office token (wrong audience)', 401, () => call(billing, officeToken)],
    ['gateway, expired token', 401, () => call(billing, expired)],
    ['gateway, forged signature', 401, () => call(billing, forged)],
    ['gateway, "Bearer" without a token', 400, () => call(billing, 'Bearer')],
    ['office, office token', 200, () => call(namespaces, officeToken)],
    ['office, gateway token (wrong audience)', 401, () => call(namespaces, gatewayToken)],
    [
      'office, write without office:records:write',
      403,
      () => call(records, officeToken, { method: 'POST' }),
    ],
    [
      'gateway, tenant acme: 3rd request this minute (limit 5)',
      200,
      () => call(billing, gatewayToken),
    ],
    ['gateway, tenant acme: 4th request', 200, () => call(billing, gatewayToken)],
    ['gateway, tenant acme: 5th request', 200, () => call(billing, gatewayToken)],
    ['gateway, tenant acme: 6th request, over its limit', 429, () => call(billing, gatewayToken)],
    ['gateway, tenant globex (pro plan) still admitted', 200, () => call(billing, globex)],
    officeCall('gateway → office, backend call: the gateway obtains an office token'),
    officeCall('gateway → office, second call: the same token, no request'),
    officeCall(
      'gateway → office, at 80% of the token’s lifetime: held token served, renewed in the background',
      { before: () => clock.advance(0.8 * 300_000), after: renewed },
    ),
    officeCall('gateway → office, the renewed token in use, no request'),
    [
      'office, the gateway’s office token',
      200,
      async () => call(namespaces, await officeTokens.get()),
    ],
    [
      'office, a Client Credentials token for the gateway (wrong audience)',
      401,
      () => call(namespaces, serviceToken),
    ],
  ]
  // On the user's behalf (token exchange, RFC 8693): Alice's gateway token, as signing in at the
  // office web front gives it, exchanged by the gateway for an office token naming her and the
  // gateway as actor.
  const { signInProvider } = demo
  const aliceGateway = await signInProvider.accessTokenFor('alice', {
    clientId: OFFICE_WEB_CLIENT.clientId,
    resource: 'urn:platform:gateway',
    scope: 'billing:read',
  })
  const exchanger = createTokenExchange({
    issuer: keycloak({ authUrl: signInProvider.url, realm: REALM }),
    ...GATEWAY_EXCHANGE_CLIENT,
  })
  const exchanged = await exchanger.exchange(aliceGateway, {
    audience: 'office',
    scope: 'office:records:read',
  })
  exchanger.close()
  // A trusted issuer's office token naming an actor the office does not let act for users.
  const otherActor = await issuer.mint({
    aud: 'office',
    sub: 'alice',
    scope: 'office:records:read',
    act: { sub: SERVICE_CLIENT.clientId },
  })
  const myNamespaces = `${gatewayUrl}/api/v1/office/my-namespaces`
  steps.push(
    [
      'gateway → office on the user’s behalf: her gateway token exchanged, the office admits it with act gateway',
      200,
      () => call(myNamespaces, aliceGateway),
    ],
    [
      'office, the exchanged token: user alice, actor gateway',
      200,
      () => call(namespaces, exchanged),
    ],
    [
      'office, the user’s gateway token itself, still refused (wrong audience)',
      401,
      () => call(namespaces, aliceGateway),
    ],
    [
      'office, a token naming an actor the office does not allow (billing-sync)',
      403,
      () => call(namespaces, otherActor),
    ],
    [
      'gateway → office on the user’s behalf with a token of another provider: not exchanged',
      403,
      () => call(myNamespaces, globex),
    ],
  )
  // Shared Signals: Bob signs out at the provider's page; the provider's transmitter pushes CAEP
  // session-revoked to the gateway, which refuses Bob's tokens from then on (Alice's still pass).
  const bobGateway = await signInProvider.accessTokenFor('bob', {
    clientId: OFFICE_WEB_CLIENT.clientId,
    resource: 'urn:platform:gateway',
    scope: 'billing:read',
  })
  steps.push(
    ['gateway, Bob’s token, before he signs out', 200, () => call(billing, bobGateway)],
    [
      'gateway, Bob signed out at the provider’s page: his token refused within a second',
      401,
      async () => {
        await signInAndOutAtProvider(signInProvider, officeUrl, 'bob')
        return refusedWithin(billing, bobGateway, 1000)
      },
    ],
    ['gateway, Alice’s token, still admitted', 200, () => call(billing, aliceGateway)],
  )
  const results: Step[] = []
  for (const [title, expected, send, explain] of steps) {
    const response = await send()
    const detail = describeResponse(response, await response.text())
    results.push({
      title,
      expected,
      status: response.status,
      detail: explain === undefined ? detail : `${detail}\n      ${explain()}`,
    })
  }
  return results
}

/** What the token source did, in words: its events without any token. */
function summarize(events: readonly TokenSourceEvent[]): string {
  return events
    .map((event) => {
      switch (event.type) {
        case 'token_requested':
          return event.renewal ? 'renewal requested' : 'token requested'
        case 'token_obtained':
          return `obtained (expires in ${event.expiresInSeconds} s)`
        case 'token_renewed':
          return `renewed (expires in ${event.expiresInSeconds} s)`
        case 'token_request_failed':
          return `failed (${event.code})`
        default:
          return 'shared cache error'
      }
    })
    .join(', ')
}

async function main(): Promise<void> {
  const demo = await startDemo()
  try {
    const steps = await runWalkthrough(demo)
    for (const step of steps) {
      const mark = step.status === step.expected ? 'ok ' : 'BAD'
      console.log(`${mark} ${step.status}  ${step.title}\n      ${step.detail}`)
    }
    const failed = steps.filter((step) => step.status !== step.expected)
    console.log(`\n${steps.length - failed.length} passed, ${failed.length} failed`)
    process.exitCode = failed.length === 0 ? 0 : 1
  } finally {
    await demo.close()
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main()
