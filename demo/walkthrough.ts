/**
 * The scripted walkthrough: every answer the platform gives, each with the request that earns it.
 * `runWalkthrough()` is also the demo's smoke test.
 *
 * Its last cases are the sign-in provider's Shared Signals (`signals.ts`): Bob signs out at the
 * provider's page, then an administrator disables Alice's account, and the gateway (signals
 * pushed) and the office (signals polled) each refuse that user's tokens within a second. The
 * walkthrough measures each: from the sign-out (the press of "Sign out" on the provider's page)
 * or the administrator's call, to the first refused answer, asking every 20 ms.
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
  /**
   * For a refusal the walkthrough waited for: milliseconds from the action (the sign-out, the
   * administrator's call) to the refused answer; absent when none came within a second.
   */
  readonly afterMs?: number
}

/** How long a refusal may take after the sign-out or the administrator's call. */
export const REFUSAL_WITHIN_MS = 1000
/** How often the walkthrough asks again while it waits for a refusal. */
const PROBE_EVERY_MS = 20

/** A response, or one the walkthrough timed (see {@link Step.afterMs}). */
type Answer = Response | Timed

/** An answer the walkthrough waited for, and when it came after `action`. */
interface Timed {
  readonly response: Response
  /** Milliseconds from the start of `action`; `undefined` when it was not refused in time. */
  readonly afterMs: number | undefined
  /** What started the clock, in words ("the sign-out"). */
  readonly action: string
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
 * front), then opens its end-session page. Resolves to pressing "Sign out" there.
 */
async function signInAndOpenSignOut(
  provider: DevProvider,
  officeUrl: string,
  user: string,
): Promise<() => Promise<void>> {
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
  return async () => {
    const confirmed = await fetch(new URL(action, provider.endSessionEndpoint), {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: jar.header, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ xsrf, logout: 'yes' }),
    })
    await confirmed.body?.cancel()
  }
}

/**
 * Does `action` (named `name`) and, from the moment it starts, calls each of `targets` (a URL and
 * a token) every {@link PROBE_EVERY_MS} until it is refused (401), for at most
 * {@link REFUSAL_WITHIN_MS}: each target's last answer, and when it was refused, counted from the
 * start of `action` (an upper bound: the refusal came at most one probe earlier).
 */
async function timeRefusals(
  name: string,
  action: () => Promise<void>,
  targets: readonly (readonly [url: string, token: string])[],
): Promise<Timed[]> {
  const started = performance.now()
  const probe = async ([url, token]: readonly [string, string]): Promise<Timed> => {
    for (;;) {
      const response = await call(url, token)
      const afterMs = Math.round(performance.now() - started)
      if (response.status === 401) return { response, afterMs, action: name }
      if (afterMs >= REFUSAL_WITHIN_MS) return { response, afterMs: undefined, action: name }
      await response.body?.cancel()
      await new Promise((resolve) => setTimeout(resolve, PROBE_EVERY_MS))
    }
  }
  const [, ...answers] = await Promise.all([action(), ...targets.map(probe)])
  return answers
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

  const steps: Array<readonly [string, number, () => Promise<Answer>, (() => string)?]> = [
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
  // Shared Signals (signals.ts): the provider keeps a stream per product. Bob signs out at the
  // provider's page: CAEP session-revoked, pushed to the gateway and polled by the office, each
  // refusing Bob's tokens from then on (Alice's still pass). Then an administrator disables
  // Alice's account: RISC account-disabled, and her tokens are refused at both, the office token
  // of her token exchange (actor gateway) included.
  const tokenOf = (user: string, product: 'gateway' | 'office') =>
    signInProvider.accessTokenFor(user, {
      clientId: OFFICE_WEB_CLIENT.clientId,
      resource: `urn:platform:${product}`,
      scope: product === 'gateway' ? 'billing:read' : 'office:records:read',
    })
  const bobGateway = await tokenOf('bob', 'gateway')
  const bobOffice = await tokenOf('bob', 'office')
  const aliceOffice = await tokenOf('alice', 'office')
  const pressSignOut = await signInAndOpenSignOut(signInProvider, officeUrl, 'bob')
  const once = <T>(run: () => Promise<T>) => {
    let started: Promise<T> | undefined
    return () => {
      started ??= run()
      return started
    }
  }
  const bobSignsOut = once(() =>
    timeRefusals('the sign-out', pressSignOut, [
      [billing, bobGateway],
      [namespaces, bobOffice],
    ]),
  )
  const aliceDisabled = once(() =>
    timeRefusals('the administrator’s call', () => signInProvider.disableAccount('alice'), [
      [billing, aliceGateway],
      [namespaces, aliceOffice],
    ]),
  )
  const timed = (answers: () => Promise<Timed[]>, index: number) => async () =>
    (await answers())[index] as Timed
  // What the product's receiver reported: the event applied, and how it was delivered.
  const applied = (product: 'gateway' | 'office', event: string) => () => {
    const seen = demo.signalEvents[product].findLast(
      (signal) => signal.type === 'signal_applied' && signal.event.endsWith(`/${event}`),
    )
    return seen?.type === 'signal_applied'
      ? `${product} receiver: ${event} applied, delivered by ${seen.delivery}`
      : `${product} receiver: no ${event} applied`
  }
  steps.push(
    ['gateway, Bob’s gateway token, before he signs out', 200, () => call(billing, bobGateway)],
    ['office, Bob’s office token, before he signs out', 200, () => call(namespaces, bobOffice)],
    [
      'gateway, Bob signed out at the provider’s page: his token refused within a second (CAEP session-revoked, pushed)',
      401,
      timed(bobSignsOut, 0),
      applied('gateway', 'session-revoked'),
    ],
    [
      'office, Bob signed out at the provider’s page: his office token refused within a second (polled)',
      401,
      timed(bobSignsOut, 1),
      applied('office', 'session-revoked'),
    ],
    ['gateway, Alice’s token, still admitted', 200, () => call(billing, aliceGateway)],
    ['office, Alice’s office token, still admitted', 200, () => call(namespaces, aliceOffice)],
    [
      'gateway, an administrator disabled Alice’s account: her token refused within a second (RISC account-disabled, pushed)',
      401,
      timed(aliceDisabled, 0),
      applied('gateway', 'account-disabled'),
    ],
    [
      'office, an administrator disabled Alice’s account: her office token refused within a second (polled)',
      401,
      timed(aliceDisabled, 1),
      applied('office', 'account-disabled'),
    ],
    [
      'office, her exchanged office token (actor gateway), refused too',
      401,
      () => call(namespaces, exchanged),
    ],
  )
  const results: Step[] = []
  for (const [title, expected, send, explain] of steps) {
    const answer = await send()
    const response = answer instanceof Response ? answer : answer.response
    const timing =
      answer instanceof Response
        ? undefined
        : answer.afterMs === undefined
          ? `not refused within ${REFUSAL_WITHIN_MS} ms of ${answer.action}`
          : `refused ${answer.afterMs} ms after ${answer.action}`
    const detail = [describeResponse(response, await response.text()), timing, explain?.()]
      .filter(Boolean)
      .join('\n      ')
    const afterMs = answer instanceof Response ? undefined : answer.afterMs
    results.push({
      title,
      expected,
      status: response.status,
      detail,
      ...(afterMs === undefined ? {} : { afterMs }),
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
    console.log(
      `\nFrom the sign-out or the administrator's call to the refusal (asked every ${PROBE_EVERY_MS} ms):`,
    )
    for (const step of steps.filter((step) => step.title.includes('refused within a second'))) {
      const took = step.afterMs === undefined ? 'over 1 s' : `${step.afterMs} ms`
      console.log(`  ${took.padStart(8)}  ${step.title.slice(0, step.title.indexOf(':'))}`)
    }
    const failed = steps.filter((step) => step.status !== step.expected)
    console.log(`\n${steps.length - failed.length} passed, ${failed.length} failed`)
    process.exitCode = failed.length === 0 ? 0 : 1
  } finally {
    await demo.close()
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main()
