/** docs/token-exchange.md. */
import { expect } from 'vitest'

import type { ScenarioTable } from '../scenario.js'

export const TOKEN_EXCHANGE: ScenarioTable = {
  'docs/token-exchange.md': {
    'The gateway reads the office for the user': {
      promises:
        "the gateway's route exchanges Alice's gateway token and the office answers 200 with user alice and actor gateway; her gateway token at the office 401: prints the two lines the guide shows",
      async run({ start }) {
        const program = await start({ until: 'none' })
        expect(await program.finished()).toBe(
          "gateway → office: 200 { user: 'alice', actor: 'gateway' }\ngateway token at the office: 401\n",
        )
      },
    },
  },
}
