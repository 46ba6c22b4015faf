/**
 * The demo's office web page in a real browser: Debian's chromium, headless, driven by
 * playwright-core. Sign in on the sign-in provider's page (`createDevProvider()`, Keycloak's
 * paths) by choosing a user, see office data fetched with the user's office token and the gateway's
 * billing answer fetched with the user's gateway token, sign out. Screenshots are kept in
 * `test-artifacts/` (git-ignored). Everything on loopback.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'

import type { BrowserContext } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Demo, startDemo } from '../../demo/servers.js'
import { type Chromium, launchChromium } from '../helpers/chromium.js'

const ARTIFACTS = join(process.cwd(), 'test-artifacts')

describe('office web page in chromium', () => {
  let demo: Demo
  let browser: BrowserContext
  let chrome: Chromium | undefined
  // A browser starting on a busy CI machine: more time than the suite's default, still bounded.
  beforeAll(async () => {
    demo = await startDemo()
    mkdirSync(ARTIFACTS, { recursive: true })
    chrome = await launchChromium()
    browser = chrome.browser
  }, 60_000)
  afterAll(async () => {
    await chrome?.close()
    await demo?.close()
  })

  it('signs in by choosing a user on the provider’s page, shows office data and the gateway’s billing answer, and signs out', async () => {
    const page = await browser.newPage()
    await page.goto(`${demo.officeUrl}/`)
    await expect.poll(() => page.textContent('body')).toContain('You are not signed in.')

    await page.click('#sign-in')
    // The sign-in provider's own page, on its own origin.
    await page.waitForURL((url) => url.href.startsWith(demo.signInProvider.url))
    expect(await page.title()).toBe('Sign in to platform')
    await page.click('button[value="alice"]')

    await page.waitForURL(`${demo.officeUrl}/`)
    expect(await page.textContent('#user')).toBe('Alice Example')
    expect(await page.textContent('#namespaces')).toBe('CRM')
    const billing = JSON.parse((await page.textContent('#billing')) ?? '{}')
    expect(billing).toMatchObject({ tenant: 'globex', subscriptions: [{ id: 'sub_1' }] })
    expect(await page.textContent('body')).toContain('your office token: 200')
    expect(await page.textContent('body')).toContain('your gateway token: 200')
    // The session cookie is HttpOnly: the page's scripts cannot read it.
    expect(await page.evaluate('document.cookie')).toBe('')
    await page.screenshot({ path: join(ARTIFACTS, 'office-signed-in.png'), fullPage: true })

    await page.click('#sign-out')
    // The provider asks to confirm the sign-out, then returns to the office page.
    await page.waitForURL((url) => url.href.startsWith(demo.signInProvider.url))
    await page.click('button[name="logout"]')
    await page.waitForURL(`${demo.officeUrl}/`)
    expect(await page.textContent('body')).toContain('You are not signed in.')
    await page.screenshot({ path: join(ARTIFACTS, 'office-signed-out.png'), fullPage: true })
  }, 60_000)
})
