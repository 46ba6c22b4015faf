/**
 * The development provider prints nothing of oidc-provider's: no notice that a quick-start
 * in-memory adapter or development keys are used (it passes its own store and keys).
 */
import { afterEach, describe, expect, it, vi } from 'vitest'

import { JOB, ORDERS, startDevProvider, tokenRequest } from './dev-provider-fixtures.js'

const CLIENT_CREDENTIALS = {
  grant_type: 'client_credentials',
  scope: 'orders:read',
  resource: ORDERS,
}

describe('createDevProvider', () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it('prints no notice of oidc-provider when it starts, issues tokens and rotates its keys', async () => {
    const printed: string[] = []
    for (const method of ['log', 'info', 'warn', 'error'] as const) {
      vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
        printed.push(args.map(String).join(' '))
      })
    }
    const provider = await startDevProvider()
    try {
      expect((await tokenRequest(provider, JOB, CLIENT_CREDENTIALS)).status).toBe(200)
      // A rotation builds a new oidc-provider instance over the same store.
      await provider.rotateKeys()
      expect((await tokenRequest(provider, JOB, CLIENT_CREDENTIALS)).status).toBe(200)
    } finally {
      await provider.close()
    }
    expect(printed.filter((line) => line.includes('oidc-provider'))).toEqual([])
  })
})
