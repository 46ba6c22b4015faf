/**
 * Step-up guards (RFC 9470) on every adapter: `auth.requireAcr(…)` and
 * `auth.requireRecentSignIn(…)` (NestJS's `@RequireAcr`, `@RequireRecentSignIn`) answer 401
 * `insufficient_user_authentication` with `acr_values` or `max_age`, read from the token's `acr`
 * and `auth_time`; alone on their route they run their gate first, once, as the other guards do.
 */
import type { Server } from 'node:http'

import request from 'supertest'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import type { GateEvent } from '../../src/events.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import {
  GUARD_APPS,
  GUARD_PATHS,
  type GuardAppFactory,
  STEP_UP_ACR,
  STEP_UP_MAX_AGE,
} from '../helpers/apps.js'
import { NEST_GUARD_APPS } from '../helpers/nest-apps.js'

const EVERY_APP = [...GUARD_APPS, ...NEST_GUARD_APPS]

const ACR_CHALLENGE = `Bearer realm="gateway", error="insufficient_user_authentication", error_description="a stronger authentication is required", acr_values="${STEP_UP_ACR.join(' ')}"`
const MAX_AGE_CHALLENGE = `Bearer realm="gateway", error="insufficient_user_authentication", error_description="a more recent authentication is required", max_age=${STEP_UP_MAX_AGE}`
const ACR_BODY = {
  error: 'insufficient_user_authentication',
  error_description: 'a stronger authentication is required',
}
const MAX_AGE_BODY = {
  error: 'insufficient_user_authentication',
  error_description: 'a more recent authentication is required',
}

let issuer: TestIssuer
let decisions = 0
let events: GateEvent[] = []
const now = () => Math.floor(Date.now() / 1000)

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
})
afterAll(async () => {
  await issuer.close()
})
beforeEach(() => {
  decisions = 0
  events = []
})

const get = (app: Server, path: string, token?: string) => {
  const pending = request(app).get(path)
  return token === undefined ? pending : pending.set('Authorization', `Bearer ${token}`)
}
const rejected = () => events.filter((event) => event.type === 'rejected')

describe.each(EVERY_APP)('%s: step-up guards', (_name, createApp: GuardAppFactory) => {
  let app: Server
  beforeAll(() => {
    const issuers = keycloak({ authUrl: issuer.url, realms: ['acme'] })
    app = createApp(
      {
        issuers,
        audience: 'gateway',
        realm: 'gateway',
        skip: () => {
          decisions++
          return false
        },
        onEvent: (event) => events.push(event),
      },
      { issuers, audience: 'office', realm: 'office', onEvent: () => {} },
    )
  })
  afterAll(() => {
    app.close()
  })

  it('requireAcr admits a token whose acr is one of the values, deciding once', async () => {
    for (const acr of STEP_UP_ACR) {
      const token = await issuer.mint({ sub: 'alice', acr })
      const res = await get(app, GUARD_PATHS.soloAcr, token)
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ authenticated: true, subject: 'alice' })
    }
    expect(decisions).toBe(2)
  })

  it('requireAcr refuses another acr, or none: 401 insufficient_user_authentication with acr_values', async () => {
    for (const claims of [{ acr: '1' }, {}, { acr: 2 }]) {
      const token = await issuer.mint({ sub: 'alice', ...claims })
      const res = await get(app, GUARD_PATHS.soloAcr, token)
      expect(res.status).toBe(401)
      expect(res.headers['www-authenticate']).toBe(ACR_CHALLENGE)
      if (res.body.handledBy === undefined) expect(res.body).toEqual(ACR_BODY)
    }
    expect(rejected()).toEqual([
      expect.objectContaining({
        code: 'ERR_INSUFFICIENT_USER_AUTHENTICATION',
        reason: 'acr_insufficient',
        status: 401,
        detail: { acr: '1' },
      }),
      expect.objectContaining({ reason: 'acr_insufficient', detail: { acr: undefined } }),
      expect.objectContaining({ reason: 'acr_insufficient', detail: { acr: undefined } }),
    ])
  })

  it('behind its own gate, requireAcr takes the gate decision: one decision per request', async () => {
    const token = await issuer.mint({ sub: 'alice', acr: '1' })
    const refused = await get(app, GUARD_PATHS.gatedAcr, token)
    expect(refused.status).toBe(401)
    expect(refused.headers['www-authenticate']).toBe(ACR_CHALLENGE)
    const admitted = await get(
      app,
      GUARD_PATHS.gatedAcr,
      await issuer.mint({ acr: STEP_UP_ACR[1] }),
    )
    expect(admitted.status).toBe(200)
    expect(decisions).toBe(2)
  })

  it('a request without a token gets the bare challenge, not the step-up one', async () => {
    const res = await get(app, GUARD_PATHS.soloAcr)
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toBe('Bearer realm="gateway"')
  })

  it('requireRecentSignIn admits a sign-in within max_age', async () => {
    const token = await issuer.mint({ sub: 'alice', auth_time: now() - STEP_UP_MAX_AGE + 30 })
    const res = await get(app, GUARD_PATHS.soloRecent, token)
    expect(res.status).toBe(200)
  })

  it('requireRecentSignIn refuses an older sign-in, and a token without auth_time: 401 with max_age', async () => {
    const old = await issuer.mint({ sub: 'alice', auth_time: now() - STEP_UP_MAX_AGE - 30 })
    const none = await issuer.mint({ sub: 'alice' })
    const text = await issuer.mint({ sub: 'alice', auth_time: String(now()) })
    for (const token of [old, none, text]) {
      const res = await get(app, GUARD_PATHS.soloRecent, token)
      expect(res.status).toBe(401)
      expect(res.headers['www-authenticate']).toBe(MAX_AGE_CHALLENGE)
      if (res.body.handledBy === undefined) expect(res.body).toEqual(MAX_AGE_BODY)
    }
    expect(rejected().map((event) => event.reason)).toEqual([
      'authentication_too_old',
      'authentication_too_old',
      'authentication_too_old',
    ])
  })

  it('guards in a chain answer in order: scope (403), then acr, then max_age, then 200', async () => {
    const recent = now() - 10
    const cases = [
      [{ scope: 'openid', acr: STEP_UP_ACR[0], auth_time: recent }, 403],
      [{ scope: 'billing:read', acr: '1', auth_time: recent }, 401, ACR_CHALLENGE],
      [
        { scope: 'billing:read', acr: STEP_UP_ACR[0], auth_time: recent - 3600 },
        401,
        MAX_AGE_CHALLENGE,
      ],
      [{ scope: 'billing:read', acr: STEP_UP_ACR[0], auth_time: recent }, 200],
    ] as const
    for (const [claims, status, challenge] of cases) {
      const res = await get(app, GUARD_PATHS.soloStepUp, await issuer.mint(claims))
      expect(res.status).toBe(status)
      if (challenge !== undefined) expect(res.headers['www-authenticate']).toBe(challenge)
    }
    expect(decisions).toBe(cases.length)
  })
})
