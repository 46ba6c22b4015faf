/**
 * The complete local sign-in of docs/testing.md, run as written (the block is read from the
 * Markdown file and started with tsx, as a user runs it) and driven in headless chromium: the
 * provider's page signs Alice in, the page shows her name and the orders the API answered to her
 * token, and sign-out goes through the provider's confirmation and back, ending the provider
 * session too (with the development provider's default post-logout redirect URIs).
 */
import { setTimeout as sleep } from 'node:timers/promises'

import type { BrowserContext } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { type Chromium, launchChromium } from '../helpers/chromium.js'
import { allSamples, type RunningSample, startSample } from '../helpers/doc-samples.js'
import { freePort } from '../helpers/redis.js'

const HEADING = 'A complete local sign-in: `signIn()` and the development provider'

describe('the local sign-in sample of docs/testing.md, in chromium', () => {
  let program: RunningSample | undefined
  let origin: string
  let chrome: Chromium | undefined
  let browser: BrowserContext

  beforeAll(async () => {
    const samples = allSamples().filter(
      (sample) => sample.file === 'docs/testing.md' && sample.heading === HEADING,
    )
    expect(samples).toHaveLength(1)
    const port = await freePort()
    origin = `http://127.0.0.1:${port}`
    program = startSample(samples[0] as (typeof samples)[number], { env: { PORT: String(port) } })
    // It answers once the provider has started and the application listens.
    for (;;) {
      if (program.child.exitCode !== null) {
        throw new Error(`the sample ended with ${program.child.exitCode}:\n${program.output()}`)
      }
      if (program.output().includes(`open ${origin}/`)) break
      await sleep(100)
    }
    chrome = await launchChromium()
    browser = chrome.browser
  }, 60_000)
  afterAll(async () => {
    await chrome?.close()
    await program?.stop()
  })

  const text = async (page: Awaited<ReturnType<BrowserContext['newPage']>>) =>
    (await page.textContent('body'))?.trim() ?? ''

  it('signs Alice in on the provider’s page, shows her orders, and signs her out at the provider too', async () => {
    const page = await browser.newPage()
    await page.goto(`${origin}/`)
    expect(await text(page)).toBe('Not signed in. Sign in')

    await page.click('#sign-in')
    await page.waitForURL((url) => url.origin !== origin)
    expect(await page.title()).toBe('Sign in to dev')
    await page.click('button[value="alice"]')

    await page.waitForURL(`${origin}/`)
    expect(await page.textContent('#user')).toBe('Alice Example')
    expect(await page.textContent('#orders')).toBe('Orders: A-1')
    const [cookie] = (await browser.cookies(origin)).filter((c) => c.name.includes('tollgate.sid'))
    expect(cookie).toMatchObject({ name: 'tollgate.sid', secure: false, httpOnly: true })

    await page.click('#sign-out')
    await page.waitForURL((url) => url.origin !== origin)
    expect(await page.title()).toBe('Sign out of dev')
    await page.click('button[name="logout"]')
    await page.waitForURL(`${origin}/`)
    expect(await text(page)).toBe('Not signed in. Sign in')

    // The provider session ended as well: signing in again shows its page.
    await page.click('#sign-in')
    await page.waitForURL((url) => url.origin !== origin)
    expect(await page.title()).toBe('Sign in to dev')
    expect(program?.output()).toBe(`open ${origin}/\n`)
  }, 60_000)
})
