/**
 * Front-channel logout in a real browser (Debian's chromium, headless): a user signs in to an
 * Express application whose every answer carries `X-Frame-Options: DENY` and `frame-ancestors
 * 'none'` (what helmet sets), then signs out at the provider; the provider's logout page frames
 * `/auth/frontchannel-logout?iss=…&sid=…` (Front-Channel Logout 1.0 §3, emulated on oidc-provider
 * v9, which has no such feature), chromium shows it, and the application's session ends.
 */
import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'

import express from 'express'
import type { BrowserContext } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { signIn } from '../../adapters/express/index.js'
import type { SignInEvent } from '../../src/signin/index.js'
import { type Chromium, launchChromium } from '../helpers/chromium.js'
import { type RunningProvider, startProvider } from '../helpers/oidc-provider.js'
import { freePort } from '../helpers/redis.js'
import { SIGNIN_CLIENT, SIGNIN_SECRET, signInClient } from '../helpers/signin.js'

describe('front-channel logout in chromium', () => {
  let provider: RunningProvider
  let server: Server
  let origin: string
  let chrome: Chromium | undefined
  let browser: BrowserContext
  const events: SignInEvent[] = []

  beforeAll(async () => {
    const port = await freePort()
    origin = `http://127.0.0.1:${port}`
    provider = await startProvider({
      clients: [
        {
          ...signInClient(origin),
          frontchannel_logout_uri: `${origin}/auth/frontchannel-logout`,
          frontchannel_logout_session_required: true,
        },
      ],
      frontchannelLogout: true,
    })
    const app = express()
    // What helmet's defaults set on every answer: no framing at all.
    app.use((_req, res, next) => {
      res.setHeader('X-Frame-Options', 'DENY')
      res.setHeader('Content-Security-Policy', "frame-ancestors 'none'")
      next()
    })
    app.use(
      signIn({
        issuer: provider.issuer(),
        discovery: true,
        clientId: SIGNIN_CLIENT,
        clientSecret: SIGNIN_SECRET,
        baseUrl: origin,
        keys: [{ id: 'k1', secret: randomBytes(32) }],
        session: { secureCookie: false },
        onEvent: (event) => events.push(event),
      }),
    )
    app.get('/public', (req, res) => {
      res.json({ signedIn: req.signin?.user !== undefined })
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

  it('shows the route in the provider’s logout page and ends the session, despite the application’s X-Frame-Options: DENY', async () => {
    const page = await browser.newPage()
    const refused: string[] = []
    page.on('console', (message) => {
      if (/Refused to (display|frame)/.test(message.text())) refused.push(message.text())
    })
    const framed: string[] = []
    page.on('framenavigated', (frame) => {
      if (frame !== page.mainFrame()) framed.push(frame.url())
    })
    await page.goto(`${origin}/auth/login?returnTo=%2Fpublic`)
    await page.waitForURL(`${origin}/public`)
    expect(JSON.parse((await page.textContent('body')) ?? '{}')).toEqual({ signedIn: true })

    // The user signs out at the provider: its confirmation, then its page with the iframes.
    const frameAnswer = page.waitForResponse((response) =>
      response.url().startsWith(`${origin}/auth/frontchannel-logout?`),
    )
    await page.goto(`${provider.issuer()}/protocol/openid-connect/logout`)
    await page.click('button[name="logout"]')
    const answer = await frameAnswer
    expect(answer.status()).toBe(200)
    const url = new URL(answer.url())
    expect(url.searchParams.get('iss')).toBe(provider.issuer())
    expect(url.searchParams.get('sid')).toMatch(/^\S+$/)
    // Its page goes on once the frame has loaded.
    await page.waitForURL((next) =>
      next.href.startsWith(`${provider.issuer()}/protocol/openid-connect/logout/success`),
    )
    expect(framed).toEqual([answer.url()])
    expect(refused).toEqual([])

    expect(events).toContainEqual(
      expect.objectContaining({ type: 'session_ended', reason: 'front_channel_logout' }),
    )
    await page.goto(`${origin}/public`)
    expect(JSON.parse((await page.textContent('body')) ?? '{}')).toEqual({ signedIn: false })
  }, 60_000)
})
