/**
 * What `npm start` prints: every curl line's token is valid as long as the banner's first line
 * says, the user's token that the gateway exchanges included (the provider's own tokens live five
 * minutes; the banner says sixty).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { BANNER_TOKEN_LIFETIME_SECONDS, bannerOf } from '../../demo/banner.js'
import { type Demo, startDemo } from '../../demo/servers.js'
import { claimsOf } from '../helpers/exchange.js'

/** The bearer tokens of the banner's curl lines, in order. */
function tokensOf(banner: string): string[] {
  return [...banner.matchAll(/'Authorization: Bearer ([^']+)'/g)].map((match) => match[1] ?? '')
}

describe('npm start’s banner', () => {
  let demo: Demo
  beforeAll(async () => {
    demo = await startDemo()
  })
  afterAll(async () => {
    await demo.close()
  })

  it.each([
    [BANNER_TOKEN_LIFETIME_SECONDS, '60 minutes'],
    [7200, '120 minutes'],
  ])(
    'gives every curl line a token valid for as long as it says (%i s: %s), the exchanged user’s token too',
    async (lifetime, words) => {
      const before = Math.floor(Date.now() / 1000)
      const banner = await bannerOf(demo, lifetime)
      expect(banner.split('\n')[0]).toBe(`tollgate demo (the tokens below are valid for ${words})`)
      const tokens = tokensOf(banner)
      // The gateway's three, the office token, and the user's token the gateway exchanges.
      expect(tokens).toHaveLength(6)
      const onBehalf = banner.match(/my-namespaces -H 'Authorization: Bearer ([^']+)'/)?.[1]
      expect(claimsOf(onBehalf ?? '')).toMatchObject({ sub: 'alice', aud: 'gateway' })
      for (const token of tokens) {
        expect(claimsOf(token)['exp']).toBeGreaterThanOrEqual(before + lifetime)
      }
    },
  )

  it('answers the token-exchange line with the user’s office data through the gateway', async () => {
    const banner = await bannerOf(demo)
    const line = banner.match(/curl -i (\S+\/my-namespaces) -H 'Authorization: Bearer ([^']+)'/)
    const response = await fetch(line?.[1] ?? '', {
      headers: { authorization: `Bearer ${line?.[2]}` },
    })
    expect(response.status).toBe(200)
    expect(await response.text()).toContain('"user":"alice","actor":"gateway"')
  })
})
