/**
 * Configuration failures of sign-in without an `onEvent` listener: reported once through a
 * process warning (rate-limited per code and subject), never per request, never a secret; with a
 * listener, the event is the report and no warning is emitted.
 */
import request from 'supertest'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import { fromEnv, type SignInEvent } from '../../src/signin/index.js'
import { resetWarningsForTests, WARNING_INTERVAL_MS } from '../../src/warnings.js'
import { manualClock } from '../helpers/client-fixtures.js'
import type { RunningProvider } from '../helpers/oidc-provider.js'
import {
  APP_ORIGIN,
  cookieHeader,
  expressSignInApp,
  signInOptions,
  startSignIn,
  startSignInProvider,
} from '../helpers/signin.js'

let provider: RunningProvider
beforeAll(async () => {
  provider = await startSignInProvider()
})
afterAll(async () => {
  await provider.close()
})

const warnings: Array<Error & { code?: string }> = []
const record = (warning: Error) => {
  if (warning.name === 'TollgateWarning') warnings.push(warning)
}
beforeEach(() => {
  resetWarningsForTests()
  warnings.length = 0
  process.on('warning', record)
})
afterEach(() => {
  process.off('warning', record)
})
/** emitWarning reports on the next tick. */
const settled = () => new Promise((resolve) => setImmediate(resolve))

const UNSET = 'TOLLGATE_TEST_WARNINGS_UNSET_KEYS'
const WRONG_SECRET = 'a-wrong-secret-Zq81-must-never-be-printed'

describe('sign-in configuration warnings', () => {
  it('warns once, not per request, when the key ring cannot be read and nobody listens', async () => {
    delete process.env[UNSET]
    const clock = manualClock()
    const app = expressSignInApp(signInOptions(provider, { keys: fromEnv(UNSET), clock }))
    for (let attempt = 0; attempt < 3; attempt++) {
      expect((await request(app).get('/auth/login')).status).toBe(503)
    }
    await settled()
    expect(warnings.map((warning) => warning.code)).toEqual(['TOLLGATE_SIGNIN_KEYS_UNAVAILABLE'])
    expect(warnings[0]?.message).toContain(`fromEnv('${UNSET}')`)
    // Rate-limited, not silenced for good: once the interval has passed it is reported again.
    clock.advance(WARNING_INTERVAL_MS)
    expect((await request(app).get('/auth/login')).status).toBe(503)
    await settled()
    expect(warnings).toHaveLength(2)
  })

  it('emits no warning when the application listens: the event is the report', async () => {
    delete process.env[UNSET]
    const events: SignInEvent[] = []
    const app = expressSignInApp(
      signInOptions(provider, { keys: fromEnv(UNSET), onEvent: (event) => events.push(event) }),
    )
    expect((await request(app).get('/auth/login')).status).toBe(503)
    await settled()
    expect(warnings).toEqual([])
    expect(events).toMatchObject([{ type: 'signin_refused', reason: 'keys_unavailable' }])
  })

  it('warns once when the provider refuses the client, naming it and where its secret comes from, never the secret', async () => {
    const app = expressSignInApp(signInOptions(provider, { clientSecret: WRONG_SECRET }))
    for (let attempt = 0; attempt < 2; attempt++) {
      const started = await startSignIn(app)
      const back = await provider.followAuthorization(
        started.location,
        `${APP_ORIGIN}/auth/callback`,
      )
      const res = await request(app)
        .get(`${back.pathname}${back.search}`)
        .set('Cookie', cookieHeader(started.cookies))
      expect(res.status).toBe(500)
    }
    await settled()
    expect(warnings.map((warning) => warning.code)).toEqual(['TOLLGATE_SIGNIN_CLIENT_REFUSED'])
    const [warning] = warnings
    expect(warning?.message).toContain('"office-web"')
    expect(warning?.message).toContain('invalid_client')
    expect(warning?.message).toContain('the "clientSecret" option')
    expect(warning?.message).not.toContain(WRONG_SECRET)
  })

  it('warns once when the client secret cannot be read, naming where it comes from', async () => {
    const variable = 'TOLLGATE_TEST_WARNINGS_UNSET_SECRET'
    delete process.env[variable]
    const app = expressSignInApp(signInOptions(provider, { clientSecret: fromEnv(variable) }))
    for (let attempt = 0; attempt < 2; attempt++) {
      expect((await request(app).get('/auth/login')).status).toBe(503)
    }
    await settled()
    expect(warnings.map((warning) => warning.code)).toEqual(['TOLLGATE_SIGNIN_SECRET_UNAVAILABLE'])
    expect(warnings[0]?.message).toContain(`fromEnv('${variable}')`)
  })

  it('does not warn for an outage of the provider, which is not configuration', async () => {
    const app = expressSignInApp(signInOptions(provider))
    await provider.stop()
    try {
      expect((await request(app).get('/auth/login')).status).toBe(503)
    } finally {
      await provider.start()
    }
    await settled()
    expect(warnings).toEqual([])
  })
})
