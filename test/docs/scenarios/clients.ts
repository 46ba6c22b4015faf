/** docs/testing.md and docs/clients.md. */
import { expect } from 'vitest'

import { answer, type Scenario, type ScenarioTable } from '../scenario.js'

/** A test program: its `.expect()`s are the checks; it ends with 0 when every one held. */
const runsItsChecks = (what: string): Scenario => ({
  promises: `runs to the end, every expect() holding: ${what}`,
  async run({ start }) {
    const program = await start({ until: 'none' })
    await program.finished()
  },
})

export const CLIENTS: ScenarioTable = {
  'docs/testing.md': {
    'Testing your routes: `tollgate/testing`': [
      runsItsChecks('a minted token with billing:read 200 with its subject, no token 401'),
      runsItsChecks('a DPoP-bound token with its proof 200, the same token as Bearer 401'),
    ],
    'Tokens shaped like Auth0, Entra, Okta and Cognito': runsItsChecks(
      "the cognito() gate fetches the pool's keys from the test issuer; an access token without aud of a listed client 200, another client 401",
    ),
    'Trying everything locally: a development OpenID provider': {
      promises:
        "the job's token (client_credentials, resource https://orders.example) is admitted by the orders gate: prints orders-job [ 'orders:read' ]",
      async run({ start }) {
        const program = await start({ until: 'none' })
        expect(await program.finished()).toBe("orders-job [ 'orders:read' ]\n")
      },
    },
    "A user's token without the pages: `accessTokenFor()`": {
      promises:
        'prints acr_insufficient (a password sign-in), admitted (the step-up acr), authentication_too_old (the same acr, signed in an hour ago)',
      async run({ start }) {
        const program = await start({ until: 'none' })
        expect(await program.finished()).toBe(
          'acr_insufficient\nadmitted\nauthentication_too_old\n',
        )
      },
    },
    'A complete local sign-in: `signIn()` and the development provider': {
      promises:
        'GET / 200 "Not signed in" with a link to /auth/login; /auth/login 302 to the provider\'s authorization endpoint with PKCE S256; GET /api/orders without a token 401 (the browser run is test/testing/local-signin-sample.test.ts)',
      async run({ start }) {
        const program = await start()
        const home = await program.fetch('/')
        expect(home.status).toBe(200)
        expect(await home.text()).toContain('Not signed in. <a id="sign-in" href="/auth/login">')
        const login = await program.fetch('/auth/login', { redirect: 'manual' })
        expect(login.status).toBe(302)
        const authorization = new URL(login.headers.get('location') ?? '')
        expect(authorization.hostname).toBe('127.0.0.1')
        expect(authorization.searchParams.get('client_id')).toBe('orders-web')
        expect(authorization.searchParams.get('code_challenge_method')).toBe('S256')
        expect((await program.fetch('/api/orders')).status).toBe(401)
      },
    },
  },

  'docs/clients.md': {
    'Backend clients: `tollgate/client`': {
      promises:
        'POST /jobs/office-sync 200 with the office answer to a billing-sync token (events logged, no token in them); a wrong secret 500 ERR_CLIENT_REFUSED; SIGTERM ends the program',
      async run({ start, world }) {
        const job = await start()
        const sync = () => job.fetch('/jobs/office-sync', { method: 'POST' })
        expect(await answer(await sync())).toEqual({
          status: 200,
          body: {
            namespaces: ['records'],
            caller: {
              aud: 'office',
              azp: 'billing-sync',
              sub: 'service-account-billing-sync',
              scope: 'office:records:read',
            },
          },
        })
        expect(job.output()).toContain("type: 'token_requested'")
        expect(job.output()).toContain("type: 'token_obtained'")
        const [call] = world.office.calls.filter(({ claims }) => claims?.['azp'] === 'billing-sync')
        expect(call?.path).toBe('/api/namespaces')

        const refused = await start({ env: { BILLING_SYNC_SECRET: 'a-wrong-secret' } })
        expect(await answer(await refused.fetch('/jobs/office-sync', { method: 'POST' }))).toEqual({
          status: 500,
          body: { error: 'ERR_CLIENT_REFUSED' },
        })
        expect(refused.output()).not.toContain('a-wrong-secret')

        job.running.child.kill('SIGTERM')
        expect(await job.running.exited).toBe(0)
      },
    },
  },
}
