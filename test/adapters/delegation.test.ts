/**
 * Delegation through every adapter, against the development provider and against the
 * suite's own oidc-provider with the same exchange grant registered: a handler's
 * `await auth.tokenFor('office')` exchanges the request's own gateway token for an office token
 * naming the user and the gateway as actor; the office admits it with `auth.actor`, still refuses
 * the raw gateway token, and refuses an actor it does not allow with 403; the exchanged token is
 * refused back at the gateway. (A DPoP-bound token is not exchanged: test/gate/actors.test.ts.)
 */
import type { AddressInfo } from 'node:net'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { createTokenExchange, type TokenExchange } from '../../src/client/index.js'
import type { GateEvent } from '../../src/events.js'
import type { GateOptions } from '../../src/gate/options.js'
import { keycloak } from '../../src/index.js'
import { APPS, DELEGATED_PATH, type ProtectedServer } from '../helpers/apps.js'
import { platformClients, signedInAccessToken } from '../helpers/client-fixtures.js'
import { GATEWAY_CLIENT, startExchangeProvider, userToken } from '../helpers/exchange.js'
import { NEST_APPS } from '../helpers/nest-apps.js'
import { startProvider } from '../helpers/oidc-provider.js'

const ALL_APPS = [...APPS, ...NEST_APPS]

/** A provider granting token exchange to the gateway, a user's gateway token, the gateway's exchanger. */
interface World {
  readonly authUrl: string
  readonly realm: string
  readonly aliceGateway: string
  readonly exchanger: TokenExchange
  close(): Promise<void>
}

let requests = 0
const counting: typeof fetch = (input, init) => {
  requests++
  return fetch(input, init)
}

/** The development provider (`createDevProvider()`, on oidc-provider). */
async function devProviderWorld(): Promise<World> {
  const provider = await startExchangeProvider()
  const exchanger = createTokenExchange({
    issuer: keycloak({ authUrl: provider.url, realm: provider.realm }),
    ...GATEWAY_CLIENT,
    fetch: counting,
  })
  return {
    authUrl: provider.url,
    realm: provider.realm,
    aliceGateway: await userToken(provider),
    exchanger,
    close: async () => {
      exchanger.close()
      await provider.close()
    },
  }
}

/** The suite's own oidc-provider (test/helpers/oidc-provider.ts) with the exchange grant on. */
async function oidcProviderWorld(): Promise<World> {
  const provider = await startProvider({
    clients: [
      ...platformClients(),
      {
        client_id: GATEWAY_CLIENT.clientId,
        client_secret: GATEWAY_CLIENT.clientSecret,
        grant_types: ['urn:ietf:params:oauth:grant-type:token-exchange'],
        redirect_uris: [],
        response_types: [],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    tokenExchange: {
      [GATEWAY_CLIENT.clientId]: { from: ['urn:platform:gateway'], to: ['urn:platform:office'] },
    },
  })
  const exchanger = createTokenExchange({
    issuer: keycloak({ authUrl: provider.url, realm: 'acme' }),
    ...GATEWAY_CLIENT,
    fetch: counting,
  })
  return {
    authUrl: provider.url,
    realm: 'acme',
    aliceGateway: await signedInAccessToken(provider, 'urn:platform:gateway'),
    exchanger,
    close: async () => {
      exchanger.close()
      await provider.close()
    },
  }
}

async function listen(server: ProtectedServer): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function close(server: ProtectedServer): Promise<void> {
  await server.gate.close()
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
}

const get = (base: string, token: string, path = DELEGATED_PATH) =>
  fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } })

describe.each([
  ['development provider', devProviderWorld],
  ['oidc-provider', oidcProviderWorld],
] as const)('against the %s', (_provider, startWorld) => {
  let world: World
  beforeAll(async () => {
    world = await startWorld()
  })
  afterAll(() => world?.close())

  describe.each(ALL_APPS)('%s', (_name, makeApp) => {
    const events: GateEvent[] = []
    let gateway: ProtectedServer
    let office: ProtectedServer
    let strictOffice: ProtectedServer
    let gatewayUrl: string
    let officeUrl: string
    let strictUrl: string

    const issuers = () => keycloak({ authUrl: world.authUrl, realms: [world.realm] })
    beforeAll(async () => {
      const gatewayOptions: GateOptions = {
        issuers: issuers(),
        audience: 'gateway',
        delegation: { exchange: world.exchanger },
        onEvent: (event) => events.push(event),
      }
      gateway = makeApp(gatewayOptions)
      office = makeApp({
        issuers: issuers(),
        audience: 'office',
        delegation: { allowedActors: ['gateway'] },
        onEvent: (event) => events.push(event),
      })
      strictOffice = makeApp({
        issuers: issuers(),
        audience: 'office',
        delegation: { allowedActors: ['billing-sync'] },
        onEvent: (event) => events.push(event),
      })
      gatewayUrl = await listen(gateway)
      officeUrl = await listen(office)
      strictUrl = await listen(strictOffice)
    })
    afterAll(async () => {
      await close(gateway)
      await close(office)
      await close(strictOffice)
    })

    it('auth.tokenFor() exchanges the request’s token: the office token names the user and the gateway as actor, one request for many calls', async () => {
      const before = requests
      const answers = await Promise.all([1, 2, 3].map(() => get(gatewayUrl, world.aliceGateway)))
      for (const answer of answers) {
        expect(answer.status).toBe(200)
        expect(await answer.json()).toEqual({
          actorAtGate: null,
          subject: 'alice',
          audience: 'office',
          act: { sub: 'gateway' },
        })
      }
      // Cached in the process for every adapter: the exchanger is shared, the first app paid for it.
      expect(requests - before).toBeLessThanOrEqual(1)
    })

    it('the office admits the exchanged token with auth.actor, still refuses the raw gateway token, and refuses an actor it does not allow with 403', async () => {
      const officeToken = await world.exchanger.exchange(world.aliceGateway, 'office')
      const admitted = await get(officeUrl, officeToken)
      expect(admitted.status).toBe(200)
      // The office has no exchanger of its own: tokenFor says so, typed.
      expect(await admitted.json()).toEqual({
        actorAtGate: 'gateway',
        refused: 'ERR_EXCHANGE_NOT_POSSIBLE',
      })
      const accepted = events.find(
        (event) => event.type === 'accepted' && event.actor === 'gateway',
      )
      expect(accepted).toMatchObject({ subject: 'alice', actor: 'gateway' })

      const raw = await get(officeUrl, world.aliceGateway)
      expect(raw.status).toBe(401)
      // The exchanged token replayed at another product (the gateway itself): not its audience.
      const replayed = await get(gatewayUrl, officeToken, '/api/v1/billing/subscriptions')
      expect(replayed.status).toBe(401)

      const refused = await get(strictUrl, officeToken)
      expect(refused.status).toBe(403)
      expect(await refused.json()).toMatchObject({ error: 'access_denied' })
      const rejected = events.find(
        (event) => event.type === 'rejected' && event.code === 'ERR_ACTOR_REFUSED',
      )
      expect(rejected).toMatchObject({
        status: 403,
        reason: 'actor_not_allowed',
        detail: { actor: 'gateway' },
      })
    })
  })
})
