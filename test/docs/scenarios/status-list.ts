/** docs/status-list.md: a gate checking Token Status Lists, against the test issuer's own lists. */
import { expect } from 'vitest'

import { answer, bearer, type ScenarioTable } from '../scenario.js'

export const STATUS_LIST: ScenarioTable = {
  'docs/status-list.md': {
    'The setup': {
      promises:
        'a token whose list index is VALID 200 (user); one the issuer set INVALID 401 invalid_token; one SUSPENDED 401; a token without status 200; a list that cannot be had 503 Retry-After',
      async run({ start, world: { kit } }) {
        const api = await start()
        const list = kit.statusList('docs-sample')
        list.set(5, 1)
        list.set(6, 2)
        const orders = async (status?: unknown) =>
          api.fetch(
            '/api/orders',
            bearer(await kit.mint({ aud: 'gateway', sub: 'alice', ...(status ? { status } : {}) })),
          )
        expect(await answer(await orders(list.reference(4)))).toEqual({
          status: 200,
          body: { user: 'alice' },
        })
        for (const idx of [5, 6]) {
          expect(await answer(await orders(list.reference(idx)))).toEqual({
            status: 401,
            body: { error: 'invalid_token', error_description: 'invalid token' },
          })
        }
        expect((await orders()).status).toBe(200)
        const missing = await orders({
          status_list: { idx: 0, uri: `${kit.issuer('acme')}/statuslists/none` },
        })
        expect(missing.status).toBe(503)
        expect(missing.headers.get('retry-after')).not.toBeNull()
      },
    },
  },
}
