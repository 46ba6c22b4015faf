/**
 * The whole step-up loop (RFC 9470) in chromium (playwright-core, Debian's chromium), on loopback:
 * a page of an Express application signed in with `tollgate/signin` calls its API, whose gate
 * refuses the token with `insufficient_user_authentication` (`auth.requireAcr(…)`); the page sends
 * the browser to `req.signin.stepUpPath()` with the challenge's `acr_values`; the development
 * provider asks the user to sign in again (its page), with the stronger `acr`; back on the page,
 * the API admits the new token. Then `maxAge: 0` makes the provider ask again despite its session.
 */
import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'

import express from 'express'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { signIn, tollgate } from '../../adapters/express/index.js'
import { stepUpChallengeOf } from '../../src/client/step-up.js'
import type { GateEvent } from '../../src/events.js'
import type { SignInContext } from '../../src/signin/signin.js'
import { createDevProvider, type DevProvider } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { type Chromium, launchChromium } from '../helpers/chromium.js'
import { freePort } from '../helpers/redis.js'
import { ORDERS, USERS, WEB } from './dev-provider-fixtures.js'

const PASSWORD = 'urn:example:pwd'
const MFA = 'urn:example:mfa'

describe('step-up in chromium: API challenge → sign in again with acr → API admits', () => {
  let provider: DevProvider
  let server: Server
  let origin: string
  let browser: BrowserContext
  let chrome: Chromium | undefined
  const gateEvents: GateEvent[] = []
  const apiCalls: { path: string; status: number; acr: unknown }[] = []

  beforeAll(async () => {
    const port = await freePort()
    origin = `http://127.0.0.1:${port}`
    provider = await createDevProvider({
      users: USERS,
      resources: { [ORDERS]: { audience: 'orders', scopes: ['orders:read'] } },
      clients: [{ ...WEB, redirectUris: [`${origin}/auth/callback`], scopes: ['orders:read'] }],
      acrValues: [PASSWORD, MFA],
    })
    const app = express()
    const api = tollgate({
      issuers: keycloak({ authUrl: provider.url, realms: [provider.realm] }),
      audience: 'orders',
      onEvent: (event) => gateEvents.push(event),
    })
    const auth = signIn({
      issuer: provider.issuer,
      discovery: true,
      clientId: WEB.clientId,
      clientSecret: WEB.clientSecret,
      baseUrl: origin,
      keys: [{ id: 'k1', secret: randomBytes(32) }],
      scope: 'openid profile orders:read',
      products: { orders: { resource: ORDERS } },
      session: { secureCookie: false },
    })
    // The API: payments need a second factor.
    app.get('/api/pay', api.requireAcr(MFA), (req, res) => {
      res.json({ paid: true, acr: req.auth?.claims.acr, authTime: req.auth?.claims.auth_time })
    })
    app.get('/api/me', api, (req, res) => {
      res.json({ acr: req.auth?.claims.acr, authTime: req.auth?.claims.auth_time })
    })
    app.use(auth)
    // A page calls the API with the user's token; a step-up challenge sends the browser to
    // sign in again with what it asks for, and back here.
    const page =
      (path: string) =>
      async (req: express.Request, res: express.Response, next: express.NextFunction) => {
        try {
          const signin = req.signin as SignInContext
          const token = await signin.accessToken('orders')
          const response = await fetch(`${origin}/api${path}`, {
            headers: { authorization: `Bearer ${token}` },
          })
          const stepUp = stepUpChallengeOf(response)
          apiCalls.push({ path, status: response.status, acr: undefined })
          if (stepUp !== undefined) {
            res.redirect(
              signin.stepUpPath({
                acrValues: stepUp.acrValues,
                maxAge: stepUp.maxAge,
                returnTo: req.originalUrl,
              }),
            )
            return
          }
          const body = (await response.json()) as Record<string, unknown>
          ;(apiCalls.at(-1) as { acr: unknown }).acr = body['acr']
          res.json(body)
        } catch (error) {
          next(error)
        }
      }
    app.get('/pay', auth.requireSignIn(), page('/pay'))
    app.get('/me', auth.requireSignIn(), page('/me'))
    app.get('/fresh', auth.requireSignIn(), (req, res) => {
      // An application asking for a sign-in now, as before changing a password.
      res.redirect((req.signin as SignInContext).stepUpPath({ maxAge: 0, returnTo: '/me' }))
    })
    server = createServer(app)
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
    chrome = await launchChromium()
    browser = chrome.browser
  }, 60_000)
  afterAll(async () => {
    await chrome?.close()
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve))
    await provider?.close()
  })

  /** On the provider's sign-in page: picks alice. */
  async function pickAlice(page: Page) {
    await page.waitForURL((url) => url.href.startsWith(provider.issuer))
    expect(await page.title()).toBe('Sign in to dev')
    await page.click('button[value="alice"]')
  }
  const body = async (page: Page) =>
    JSON.parse((await page.textContent('body')) ?? '{}') as Record<string, unknown>

  it('refused with the challenge, signed in again with the acr asked for, admitted', async () => {
    const page = await browser.newPage()
    await page.goto(`${origin}/me`)
    // First sign-in: the weakest acr, which /api/me accepts.
    await pickAlice(page)
    await page.waitForURL(`${origin}/me`)
    const first = await body(page)
    expect(first['acr']).toBe(PASSWORD)

    // /pay: the API refuses (401 insufficient_user_authentication, acr_values="urn:example:mfa"),
    // the page sends the browser to sign in again; the provider shows its page despite its session.
    await page.goto(`${origin}/pay`)
    await page.waitForURL((url) => url.href.startsWith(provider.issuer))
    expect(await page.textContent('#acr')).toBe(`Authentication asked for: ${MFA}`)
    await pickAlice(page)
    await page.waitForURL(`${origin}/pay`)
    expect(await body(page)).toMatchObject({ paid: true, acr: MFA })

    expect(apiCalls.map(({ path, status, acr }) => [path, status, acr])).toEqual([
      ['/me', 200, PASSWORD],
      ['/pay', 401, undefined],
      ['/pay', 200, MFA],
    ])
    const refusals = gateEvents.filter((event) => event.type === 'rejected')
    expect(refusals).toEqual([
      expect.objectContaining({
        code: 'ERR_INSUFFICIENT_USER_AUTHENTICATION',
        reason: 'acr_insufficient',
        path: '/api/pay',
      }),
    ])
  }, 60_000)

  it('maxAge 0 makes the provider show its sign-in page again despite its session', async () => {
    const page = await browser.newPage()
    await page.goto(`${origin}/me`)
    const before = await body(page)
    expect(before['authTime']).toBeTypeOf('number')
    await page.goto(`${origin}/fresh`)
    // Without max_age the provider's session would send the browser straight back.
    await pickAlice(page)
    await page.waitForURL(`${origin}/me`)
    const after = await body(page)
    expect(after['authTime'] as number).toBeGreaterThanOrEqual(before['authTime'] as number)
  }, 60_000)
})
