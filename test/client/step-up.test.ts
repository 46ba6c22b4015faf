/**
 * The client side of step-up (RFC 9470): `createAuthorizedFetch` rejects a 401
 * `insufficient_user_authentication` with a `StepUpRequiredError` carrying the challenge's
 * `acr_values` and `max_age`, against a resource server whose gate refuses with tollgate's own
 * step-up guards, and the challenge parser reads what other servers send.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import {
  createAuthorizedFetch,
  createTokenSource,
  isStepUpRequired,
  StepUpRequiredError,
  stepUpChallengeOf,
} from '../../src/client/index.js'
import { parseChallenges } from '../../src/client/step-up.js'
import {
  createGate,
  type Gate,
  keycloak,
  renderError,
  requireAcr,
  requireRecentSignIn,
} from '../../src/index.js'
import { manualClock, SECRET, startPlatformProvider } from '../helpers/client-fixtures.js'
import type { RunningProvider } from '../helpers/oidc-provider.js'

let provider: RunningProvider
let office: Server
let gate: Gate
let officeUrl: string
let requests = 0
const ROUTES = {
  '/pay': requireAcr('urn:example:mfa', 'urn:example:hwk'),
  '/settings': requireRecentSignIn(300),
} as Record<string, ReturnType<typeof requireAcr>>

beforeAll(async () => {
  provider = await startPlatformProvider()
  gate = createGate({
    issuers: keycloak({ authUrl: provider.url, realms: ['acme'] }),
    audience: 'office',
    resourceMetadata: { resource: 'http://127.0.0.1/office' },
    onEvent: () => {},
  })
  office = createServer((req, res) => {
    requests++
    const request = { headers: req.headers, url: req.url, method: req.method }
    gate.check(request).then(
      ({ auth }) => {
        const guard = ROUTES[req.url ?? '']
        try {
          if (guard !== undefined) gate.authorize(guard, auth, request)
        } catch (error) {
          const rendered = renderError(error)
          res.writeHead(rendered.status, rendered.headers).end(rendered.body)
          return
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')
      },
      (error: unknown) => {
        const rendered = renderError(error)
        res.writeHead(rendered.status, rendered.headers).end(rendered.body)
      },
    )
  })
  await new Promise<void>((resolve) => office.listen(0, '127.0.0.1', resolve))
  officeUrl = `http://127.0.0.1:${(office.address() as AddressInfo).port}`
})
afterAll(async () => {
  office.closeAllConnections()
  await new Promise((resolve) => office.close(resolve))
  await gate.close()
  await provider.close()
})
beforeEach(() => {
  requests = 0
  provider.resetGrants()
})

function officeFetch() {
  const source = createTokenSource({
    issuer: keycloak({ authUrl: provider.url, realms: ['acme'] }),
    clientId: 'billing-sync',
    clientSecret: SECRET,
    resource: 'urn:platform:office',
    clock: manualClock(),
  })
  return createAuthorizedFetch(source)
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('resolved')
    },
    (error: unknown) => error,
  )
}

describe('createAuthorizedFetch and a step-up challenge', () => {
  it('rejects with StepUpRequiredError carrying acr_values, sent once, no new token asked for', async () => {
    const error = await rejection(officeFetch()(`${officeUrl}/pay`))
    expect(error).toBeInstanceOf(StepUpRequiredError)
    expect(isStepUpRequired(error)).toBe(true)
    expect(error).toMatchObject({
      code: 'ERR_STEP_UP_REQUIRED',
      reason: 'acr',
      status: 401,
      acrValues: ['urn:example:mfa', 'urn:example:hwk'],
      maxAge: undefined,
      resourceMetadata: 'http://127.0.0.1/.well-known/oauth-protected-resource/office',
    })
    expect((error as Error).message).toBe(
      'the resource server requires the user to sign in again with acr_values "urn:example:mfa urn:example:hwk": redirect to the sign-in with them, then retry',
    )
    expect(requests).toBe(1)
    expect(provider.grantCount()).toBe(1)
  })

  it('rejects with maxAge for a route that requires a recent sign-in (client tokens carry no auth_time)', async () => {
    const error = await rejection(officeFetch()(`${officeUrl}/settings`))
    expect(error).toMatchObject({ reason: 'max_age', maxAge: 300, acrValues: undefined })
  })

  it('returns any other answer as it is', async () => {
    const response = await officeFetch()(`${officeUrl}/other`)
    expect(response.status).toBe(200)
  })
})

describe('stepUpChallengeOf', () => {
  const answer = (status: number, challenge: string) =>
    new Response(null, { status, headers: { 'WWW-Authenticate': challenge } })

  it('reads both parameters, from the DPoP challenge too', () => {
    const error = stepUpChallengeOf(
      answer(
        401,
        'Bearer realm="api", DPoP realm="api", error="insufficient_user_authentication", error_description="x, y", acr_values="a b", max_age=0, algs="ES256"',
      ),
    )
    expect(error).toMatchObject({ reason: 'acr_and_max_age', acrValues: ['a', 'b'], maxAge: 0 })
  })

  it('is undefined for another status, another error, or the word in a description only', () => {
    expect(stepUpChallengeOf(answer(403, 'Bearer error="insufficient_user_authentication"'))).toBe(
      undefined,
    )
    expect(stepUpChallengeOf(answer(401, 'Bearer error="invalid_token"'))).toBe(undefined)
    expect(
      stepUpChallengeOf(
        answer(
          401,
          'Bearer error="invalid_token", error_description="insufficient_user_authentication"',
        ),
      ),
    ).toBe(undefined)
  })

  it('ignores a max_age that is not a number of seconds', () => {
    const error = stepUpChallengeOf(
      answer(401, 'Bearer error=insufficient_user_authentication, max_age="-5"'),
    )
    expect(error).toMatchObject({ reason: 'unspecified', maxAge: undefined })
  })
})

describe('parseChallenges', () => {
  it('reads several challenges, quoted strings with commas and escapes, token68', () => {
    const parsed = parseChallenges(
      'Negotiate abc123==, Bearer Realm="a, \\"b\\"", ERROR=invalid_token, Basic realm="c"',
    )
    expect(
      parsed.map(({ scheme, parameters }) => [scheme, Object.fromEntries(parameters)]),
    ).toEqual([
      ['negotiate', {}],
      ['bearer', { realm: 'a, "b"', error: 'invalid_token' }],
      ['basic', { realm: 'c' }],
    ])
  })

  it('keeps what it read before an unterminated quoted string', () => {
    const parsed = parseChallenges('Bearer error="insufficient_user_authentication", acr_values="a')
    expect(Object.fromEntries(parsed[0]?.parameters ?? [])).toEqual({
      error: 'insufficient_user_authentication',
    })
  })
})
