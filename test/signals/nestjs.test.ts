/**
 * The push endpoint on tollgate/nestjs, on both of Nest's HTTP platforms: `sharedSignals` in the
 * module options serves it for POST ahead of the guard, built from the module's gate.
 */
import type { Server } from 'node:http'

import { Controller, Get, Module } from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { ExpressAdapter } from '@nestjs/platform-express'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { type Admission, Auth, keycloak, TollgateModule } from '../../adapters/nestjs/index.js'
import { createSignalReceiver } from '../../src/signals/receiver.js'
import { SSF_EVENTS } from '../../src/testing/ssf-transmitter.js'
import {
  AUDIENCE,
  nowSeconds,
  PUSH_AUTHORIZATION,
  type SignalsWorld,
  startWorld,
} from './fixtures.js'

let world: SignalsWorld
beforeAll(async () => {
  world = await startWorld()
})
afterAll(async () => {
  await world.close()
})

@Controller('me')
class MeController {
  @Get()
  me(auth: Admission) {
    return { subject: auth.subject }
  }
}
// `@Auth()` on the parameter, applied by hand: the linter parses parameter decorators only in
// the files its configuration names.
Auth()(MeController.prototype, 'me', 0)

function appModule() {
  @Module({
    imports: [
      TollgateModule.forRoot(
        {
          issuers: keycloak({ authUrl: world.issuer.url, realms: ['acme'] }),
          audience: 'gateway',
          revocation: {},
        },
        {
          sharedSignals: {
            path: '/ssf/events',
            receiver: (gate) =>
              createSignalReceiver({
                gate,
                transmitter: { issuer: world.transmitter.issuer },
                audience: AUDIENCE,
                authorization: PUSH_AUTHORIZATION,
              }),
          },
        },
      ),
    ],
    controllers: [MeController],
  })
  class AppModule {}
  return AppModule
}

describe.each(['express', 'fastify'] as const)('sharedSignals on the %s platform', (platform) => {
  it('answers 202 to a pushed account-disabled without a bearer token; the guard then refuses the user', async () => {
    const adapter = platform === 'express' ? new ExpressAdapter() : new FastifyAdapter()
    const app = await NestFactory.create(appModule(), adapter, { logger: false })
    await app.init()
    if (platform === 'fastify') await (adapter as FastifyAdapter).getInstance().ready()
    try {
      const server = app.getHttpServer() as Server
      const sub = `nest-${platform}`
      const token = await world.issuer.mint({ sub, iat: nowSeconds() - 30 })
      await request(server)
        .get('/me')
        .set('Authorization', `Bearer ${token}`)
        .expect(200, { subject: sub })
      const set = await world.transmitter.sign(SSF_EVENTS.accountDisabled, {
        format: 'iss_sub',
        iss: world.tokenIssuer,
        sub,
      })
      const pushed = await request(server)
        .post('/ssf/events')
        .set('Content-Type', 'application/secevent+jwt')
        .set('Authorization', PUSH_AUTHORIZATION)
        .send(set.token)
      expect(pushed.status).toBe(202)
      const refused = await request(server)
        .post('/ssf/events')
        .set('Content-Type', 'application/secevent+jwt')
        .send(set.token)
      expect(refused.status).toBe(400)
      expect(refused.body).toEqual({
        err: 'authentication_failed',
        description: expect.any(String),
      })
      expect(
        (await request(server).get('/me').set('Authorization', `Bearer ${token}`)).status,
      ).toBe(401)
    } finally {
      await app.close()
    }
  })
})

describe('moduleOptions.sharedSignals', () => {
  it('is validated at start-up with a message that names it', () => {
    const gateOptions = {
      issuers: keycloak({ authUrl: world.issuer.url, realms: ['acme'] }),
      audience: 'gateway',
    }
    expect(() =>
      TollgateModule.forRoot(gateOptions, {
        sharedSignals: { path: 'ssf', receiver: () => undefined as never },
      }),
    ).toThrow(`"moduleOptions.sharedSignals.path" must be a path starting with '/'`)
    expect(() =>
      TollgateModule.forRoot(gateOptions, {
        sharedSignals: { path: '/ssf', receiver: 'no' as never },
      }),
    ).toThrow('"moduleOptions.sharedSignals.receiver" must be a function')
  })
})
