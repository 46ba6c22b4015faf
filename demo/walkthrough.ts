/**
 * The scripted walkthrough: every answer the platform gives, each with the request that earns it.
 * `runWalkthrough()` is also the demo's smoke test.
 */
import { pathToFileURL } from 'node:url'

import { type Demo, REALM, SERVICE_CLIENT, startDemo } from './servers.js'

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

  const form = new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: SERVICE_CLIENT.clientId,
    client_secret: SERVICE_CLIENT.clientSecret,
  })
  const tokenResponse = await fetch(`${issuer.issuer(REALM)}/protocol/openid-connect/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: form,
  })
  const serviceToken = ((await tokenResponse.json()) as { access_token: string }).access_token

  const steps: Array<[string, number, () => Promise<Response>]> = [
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
  ]
  const results: Step[] = []
  for (const [title, expected, send] of steps) {
    const response = await send()
    results.push({
      title,
      expected,
      status: response.status,
      detail: describeResponse(response, await response.text()),
    })
  }
  return results
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
