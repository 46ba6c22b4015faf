/**
 * The development provider's pages in a real browser: Debian's chromium (`CHROMIUM_PATH`
 * overrides it), headless, driven by playwright-core. A person's path through sign-in with
 * `tollgate/signin` (Express): the provider's page lists the users, one click signs in; then
 * sign-out at the provider's end-session page, whose back-channel logout ends the application's
 * session. Everything on loopback.
 */
import { randomBytes } from 'node:crypto'
import type { Server } from 'node:http'

import type { BrowserContext } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DevProvider } from '../../src/testing/index.js'
import { type Chromium, launchChromium } from '../helpers/chromium.js'
import { freePort } from '../helpers/redis.js'
import { expressSignInApp } from '../helpers/signin.js'
import { ORDERS, startDevProvider, WEB } from './dev-provider-fixtures.js'

describe('development provider sign-in in chromium', () => {
  let provider: DevProvider
  let server: Server
  let origin: string
  let browser: BrowserContext
  let chrome: Chromium | undefined
  beforeAll(async () => {
    const port = await freePort()
    origin = `http://127.0.0.1:${port}`
    provider = await startDevProvider({
      web: {
        redirectUris: [`${origin}/auth/callback`],
        backchannelLogoutUri: `${origin}/auth/backchannel-logout`,
      },
    })
    server = expressSignInApp({
      issuer: provider.issuer,
      discovery: true,
      clientId: WEB.clientId,
      clientSecret: WEB.clientSecret,
      baseUrl: origin,
      keys: [{ id: 'k1', secret: randomBytes(32) }],
      scope: 'openid profile email orders:read',
      products: { orders: { resource: ORDERS } },
      session: { secureCookie: false },
    })
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

  it('signs a user in by a click on the provider’s page, and the provider’s sign-out ends the application’s session', async () => {
    const page = await browser.newPage()
    await page.goto(`${origin}/auth/login?returnTo=%2Fme`)
    await page.waitForURL((url) => url.href.startsWith(provider.issuer))
    expect(await page.title()).toBe('Sign in to dev')
    expect(await page.locator('button[name="user"]').allTextContents()).toEqual([
      'Alice Example (alice)',
      'Bob Example (bob)',
    ])
    await page.click('button[value="alice"]')

    await page.waitForURL(`${origin}/me`)
    expect(JSON.parse((await page.textContent('body')) ?? '{}')).toMatchObject({
      subject: 'alice',
      claims: { name: 'Alice Example', email: 'alice@example.com' },
    })

    await page.goto(provider.endSessionEndpoint)
    expect(await page.title()).toBe('Sign out of dev')
    await page.click('button[name="logout"]')
    await expect.poll(() => page.textContent('h1')).toBe('Signed out')

    await page.goto(`${origin}/public`)
    expect(JSON.parse((await page.textContent('body')) ?? '{}')).toEqual({ signedIn: false })
  }, 60_000)
})
