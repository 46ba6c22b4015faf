/**
 * The test transmitter as the development provider uses it: its configuration document, and
 * what a sign-out at the provider's page sends.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { SSF_EVENTS, transmitSignOut } from '../../src/testing/ssf-transmitter.js'
import {
  decided,
  nowSeconds,
  type Receiving,
  receiving,
  type SignalsWorld,
  startWorld,
} from './fixtures.js'

let world: SignalsWorld
let pushed: Receiving

beforeAll(async () => {
  // The transmitter pushes to a receiver served on loopback.
  const { createServer } = await import('node:http')
  let handle:
    | ((req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void)
    | undefined
  const server = createServer((req, res) => handle?.(req, res))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as import('node:net').AddressInfo).port
  world = await startWorld({
    delivery: {
      method: 'push',
      endpoint: `http://127.0.0.1:${port}/ssf`,
      authorization: 'Bearer push-secret-Tq8vL2-never-shown',
    },
  })
  pushed = receiving(world)
  handle = (req, res) => {
    pushed.receiver
      .push({ headers: req.headers, method: req.method, stream: req })
      .then((answer) => {
        res.writeHead(answer.status, answer.headers).end(answer.body)
      })
  }
  const close = world.close
  world = {
    ...world,
    close: async () => {
      await pushed.close()
      server.close()
      await close()
    },
  }
})
afterAll(async () => {
  await world.close()
})

describe('the test transmitter', () => {
  it('publishes its configuration document (SSF 1.0 §7.1) with its issuer and jwks_uri', async () => {
    const document = await (
      await fetch(`${world.transmitter.issuer}/.well-known/ssf-configuration`)
    ).json()
    expect(document).toMatchObject({
      issuer: world.transmitter.issuer,
      jwks_uri: world.transmitter.jwksUri,
      delivery_methods_supported: expect.arrayContaining([
        'urn:ietf:rfc:8935',
        'urn:ietf:rfc:8936',
      ]),
    })
  })

  it('a sign-out with bySession sends session-revoked for each session of the user’s clients', async () => {
    const a = await world.issuer.mint({ sub: 'out', sid: 'sa', iat: nowSeconds() - 30 })
    const b = await world.issuer.mint({ sub: 'out', sid: 'sb', iat: nowSeconds() - 30 })
    const other = await world.issuer.mint({ sub: 'out', sid: 'sc', iat: nowSeconds() - 30 })
    await transmitSignOut(
      world.transmitter,
      world.tokenIssuer,
      {
        accountId: 'out',
        authorizations: { web: { sid: 'sa' }, mobile: { sid: 'sb' } },
      },
      { bySession: true },
    )
    expect(await decided(pushed.gate, a)).toBe('revoked')
    expect(await decided(pushed.gate, b)).toBe('revoked')
    expect(await decided(pushed.gate, other)).toBe('admitted')
  })

  it('a sign-out ends the user’s tokens (their access tokens need not carry sid); account-disabled from an admin call too', async () => {
    const token = await world.issuer.mint({ sub: 'out2', iat: nowSeconds() - 30 })
    const withSession = await world.issuer.mint({ sub: 'out2', sid: 'x', iat: nowSeconds() - 30 })
    await transmitSignOut(world.transmitter, world.tokenIssuer, {
      accountId: 'out2',
      authorizations: { web: { sid: 'x' } },
    })
    expect(await decided(pushed.gate, token)).toBe('revoked')
    expect(await decided(pushed.gate, withSession)).toBe('revoked')
    const admin = await world.issuer.mint({ sub: 'out3', iat: nowSeconds() - 30 })
    const set = await world.transmitter.accountDisabled({ iss: world.tokenIssuer, sub: 'out3' })
    expect(set.jti).toBeTypeOf('string')
    expect(await decided(pushed.gate, admin)).toBe('revoked')
    expect(
      pushed.events.filter((event) => event.type === 'signal_applied').map((event) => event.event),
    ).toContain(SSF_EVENTS.accountDisabled)
  })
})
