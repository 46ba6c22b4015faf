/**
 * A consumer of `tollgate/nestjs` on the Fastify platform: the install line of
 * docs/frameworks/nestjs.md with `@nestjs/platform-fastify` for `@nestjs/platform-express` (no
 * Express), the guide's module and its Fastify bootstrap, a scoped route and a public one.
 * scripts/check-consumers.ts type-checks it against the packed package and runs it on each Node
 * version of package.json `engines`.
 *
 * @module
 */
import assert from 'node:assert/strict'

import { Controller, Get, Module } from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify'
import {
  type Admission,
  Auth,
  keycloak,
  Public,
  RequireScopes,
  TollgateModule,
} from 'tollgate/nestjs'
import { createTestIssuer } from 'tollgate/testing'

const issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })

@Controller('invoices')
class InvoicesController {
  @Get()
  @RequireScopes('billing:read')
  list(@Auth() auth: Admission) {
    return { user: auth.subject }
  }
}

@Controller('health')
class HealthController {
  @Public()
  @Get()
  health() {
    return { ok: true }
  }
}

@Module({
  imports: [
    TollgateModule.forRoot({
      issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
      audience: 'gateway',
    }),
  ],
  controllers: [InvoicesController, HealthController],
})
class AppModule {}

const app = await NestFactory.create<NestFastifyApplication>(AppModule, new FastifyAdapter(), {
  logger: false,
})
await app.listen(0, '127.0.0.1')
const origin = (await app.getUrl()).replace('[::1]', '127.0.0.1')

try {
  assert.equal((await fetch(`${origin}/health`)).status, 200, 'a public route')
  assert.equal((await fetch(`${origin}/invoices`)).status, 401, 'no token')
  const unscoped = await issuer.mint({ sub: 'alice' })
  const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } })
  assert.equal((await fetch(`${origin}/invoices`, bearer(unscoped))).status, 403, 'no scope')
  const token = await issuer.mint({ sub: 'alice', scope: 'billing:read' })
  const admitted = await fetch(`${origin}/invoices`, bearer(token))
  assert.equal(admitted.status, 200, 'a token with the scope')
  assert.deepEqual(await admitted.json(), { user: 'alice' })
} finally {
  await app.close()
  await issuer.close()
}
