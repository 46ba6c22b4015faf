/**
 * Debian's chromium, headless, through playwright-core, for the browser tests: a fresh profile
 * each run, nothing beyond loopback. `CHROMIUM_PATH` points elsewhere (another distribution, a
 * Chrome build).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { type BrowserContext, chromium } from 'playwright-core'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/** A browser and its throwaway profile; `close()` ends both. */
export interface Chromium {
  readonly browser: BrowserContext
  close(): Promise<void>
}

export async function launchChromium(): Promise<Chromium> {
  const profile = mkdtempSync(join(tmpdir(), 'tollgate-chromium-'))
  // launchPersistentContext owns --user-data-dir; the flags keep chromium off the network (no
  // background fetches, no component updates), which this machine refuses anyway.
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
  return {
    browser,
    async close() {
      await browser.close()
      rmSync(profile, { recursive: true, force: true })
    },
  }
}
