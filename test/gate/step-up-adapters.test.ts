/**
 * Step-up guards against claims an attacker or a broken provider controls, on every adapter
 * (NestJS's decorators included): an `auth_time` in the future, or after the token's `iat`, is
 * no recent sign-in (OpenID Connect Core §2: the time the authentication occurred), and `acr` is
 * compared as a whole value (RFC 9470 §3, OpenID Connect Core §3.1.2.1: `acr_values` is a
 * space-separated list), never as a part of one.
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

const MAX_AGE_CHALLENGE = `Bearer realm="gateway", error="insufficient_user_authentication", error_description="a more recent authentication is required", max_age=${STEP_UP_MAX_AGE}`
const ACR_CHALLENGE = `Bearer realm="gateway", error="insufficient_user_authentication", error_description="a stronger authentication is required", acr_values="${STEP_UP_ACR.join(' ')}"`

let issuer: TestIssuer
let events: GateEvent[] = []
const now = () => Math.floor(Date.now() / 1000)

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
})
afterAll(async () => {
  await issuer.close()
})
beforeEach(() => {
  events = []
})

const get = (app: Server, path: string, token: string) =>
  request(app).get(path).set('Authorization', `Bearer ${token}`)
const rejected = () => events.filter((event) => event.type === 'rejected')

describe.each(EVERY_APP)(
  '%s: step-up guards against forged claims',
  (_name, createApp: GuardAppFactory) => {
    let app: Server
    beforeAll(() => {
      const issuers = keycloak({ authUrl: issuer.url, realms: ['acme'] })
      app = createApp(
        {
          issuers,
          audience: 'gateway',
          realm: 'gateway',
          onEvent: (event) => events.push(event),
        },
        { issuers, audience: 'office', realm: 'office', onEvent: () => {} },
      )
    })
    afterAll(() => {
      app.close()
    })

    it('requireRecentSignIn refuses an auth_time in the future (an hour, ten years): 401 with max_age, reason authentication_in_future', async () => {
      const hour = now() + 3600
      const decade = now() + 10 * 365 * 86_400
      for (const auth_time of [hour, decade]) {
        // No `iat` in the token: the bound is this machine's clock alone.
        const token = await issuer.mint({ sub: 'alice', auth_time, iat: undefined })
        const res = await get(app, GUARD_PATHS.soloRecent, token)
        expect(res.status).toBe(401)
        expect(res.headers['www-authenticate']).toBe(MAX_AGE_CHALLENGE)
        if (res.body.handledBy === undefined) {
          expect(res.body).toEqual({
            error: 'insufficient_user_authentication',
            error_description: 'a more recent authentication is required',
          })
        }
      }
      expect(rejected()).toEqual([
        expect.objectContaining({
          code: 'ERR_INSUFFICIENT_USER_AUTHENTICATION',
          reason: 'authentication_in_future',
          status: 401,
          detail: { authTime: hour, iat: undefined },
        }),
        expect.objectContaining({
          reason: 'authentication_in_future',
          detail: { authTime: decade, iat: undefined },
        }),
      ])
    })

    it("requireRecentSignIn refuses an auth_time later than the token's iat: a token issued before the sign-in it reports", async () => {
      const iat = now() - 200
      const token = await issuer.mint({ sub: 'alice', iat, auth_time: now() - 30 })
      const res = await get(app, GUARD_PATHS.soloRecent, token)
      expect(res.status).toBe(401)
      expect(res.headers['www-authenticate']).toBe(MAX_AGE_CHALLENGE)
      expect(rejected()).toEqual([
        expect.objectContaining({
          reason: 'authentication_in_future',
          detail: expect.objectContaining({ iat }),
        }),
      ])
    })

    it('requireRecentSignIn admits a recent sign-in a moment before iat, and one a second ahead of this clock', async () => {
      const iat = now()
      for (const auth_time of [iat - 20, iat + 1]) {
        const res = await get(app, GUARD_PATHS.soloRecent, await issuer.mint({ iat, auth_time }))
        expect(res.status).toBe(200)
      }
    })

    it('requireAcr refuses an acr that is a prefix or an extension of an accepted one, or the accepted list itself', async () => {
      const [mfa] = STEP_UP_ACR
      const forged = [mfa.slice(0, -1), `${mfa}x`, STEP_UP_ACR.join(' '), 'example:mfa']
      for (const acr of forged) {
        const res = await get(app, GUARD_PATHS.soloAcr, await issuer.mint({ sub: 'alice', acr }))
        expect(res.status).toBe(401)
        expect(res.headers['www-authenticate']).toBe(ACR_CHALLENGE)
      }
      expect(
        rejected().map((event) => [
          event.reason,
          (event as { detail?: { acr?: string } }).detail?.acr,
        ]),
      ).toEqual(forged.map((acr) => ['acr_insufficient', acr]))
      const exact = await get(
        app,
        GUARD_PATHS.soloAcr,
        await issuer.mint({ sub: 'alice', acr: mfa }),
      )
      expect(exact.status).toBe(200)
    })
  },
)
