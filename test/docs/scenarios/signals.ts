/** docs/signals.md. */
import { expect } from 'vitest'

import { answer, bearer, eventually, type ScenarioTable } from '../scenario.js'

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
    'The stream in gate.ready()': {
      promises:
        'GET /ready 200 with the stream reported; paused by the transmitter: 200, status paused; disabled: 503, status disabled; enabled again: 200',
      async run({ start }) {
        const app = await start()
        const ready = async () => {
          const { status, body } = await answer(await app.fetch('/ready'))
          const [stream] = (body as { signals: { status?: string; ready: boolean }[] }).signals
          return { status, stream: stream?.status, ready: stream?.ready }
        }
        expect(await ready()).toEqual({ status: 200, stream: undefined, ready: true })
        const setStatus = async (status: string) =>
          expect((await app.fetch(`/provider/stream/${status}`, { method: 'POST' })).status).toBe(
            204,
          )
        await setStatus('paused')
        expect(await ready()).toEqual({ status: 200, stream: 'paused', ready: true })
        await setStatus('disabled')
        expect(await ready()).toEqual({ status: 503, stream: 'disabled', ready: false })
        await setStatus('enabled')
        expect(await ready()).toEqual({ status: 200, stream: 'enabled', ready: true })
      },
    },
  },
}
