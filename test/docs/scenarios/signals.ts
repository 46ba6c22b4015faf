/** docs/signals.md. */
import { expect } from 'vitest'

import { bearer, eventually, type ScenarioTable } from '../scenario.js'

export const SIGNALS: ScenarioTable = {
  'docs/signals.md': {
    'A receiver on Express': {
      promises:
        'Alice’s token admitted; after the provider disables her (a pushed account-disabled) 401 with the same token; a token issued after the event admitted; no token 401',
      async run({ start, world: { kit } }) {
        const app = await start()
        const now = Math.floor(Date.now() / 1000)
        const token = await kit.mint({ sub: 'alice', iat: now - 30 })
        expect((await app.fetch('/me', bearer(token))).status).toBe(200)
        expect((await app.fetch('/me')).status).toBe(401)
        expect((await app.fetch('/provider/disable/alice', { method: 'POST' })).status).toBe(204)
        expect((await app.fetch('/me', bearer(token))).status).toBe(401)
        // A token issued after the event (whole seconds: from the next second on) is admitted.
        await eventually(
          'a token issued after the event',
          async () => (await app.fetch('/me', bearer(await kit.mint({ sub: 'alice' })))).status,
          (status) => status === 200,
        )
        expect(app.output()).toMatch(/signal_applied/)
      },
    },
  },
}
