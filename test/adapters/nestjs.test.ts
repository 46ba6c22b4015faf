/**
 * tollgate/nestjs on both NestJS HTTP platforms (Express and Fastify): the contract every adapter
 * keeps, the decorators, the module's options, and answers byte for byte those of tollgate/express.
 */
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { Server } from 'node:http'

import {
  type ArgumentsHost,
  Catch,
  Controller,
  type DynamicModule,
  type ExceptionFilter,
  Get,
  HttpCode,
  HttpException,
  type INestApplication,
  Module,
  Post,
  UseGuards,
} from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js'
import { ExpressAdapter } from '@nestjs/platform-express'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import {
  type Admission,
  Auth,
  type Gate,
  keycloak,
  Public,
  RequireAnyScope,
  RequireClientRoles,
  RequireRealmRoles,
  RequireScopes,
  TOLLGATE_GATE,
  TollgateGuard,
  TollgateModule,
  type TollgateModuleOptions,
  TollgateRefusal,
} from '../../adapters/nestjs/index.js'
import { TokenMissingError } from '../../src/errors.js'
import type { GateEvent } from '../../src/events.js'
import { type GateOptions, renderError, TollgateError } from '../../src/index.js'
import { createDpopKey, createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { APPS, describeAuth, LOGOUT_PATH, PUSH_PATH, TWO_SCOPES_PATH } from '../helpers/apps.js'
import { extractSamples } from '../helpers/doc-samples.js'
import { startRedisServer } from '../helpers/redis.js'

const ROUTE = '/api/v1/billing/subscriptions'
const PLATFORMS = ['express', 'fastify'] as const
type PlatformName = (typeof PLATFORMS)[number]

let issuer: TestIssuer
let options: GateOptions

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  options = { issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }), audience: 'gateway' }
})
afterAll(async () => {
  await issuer.close()
})

// The routes of test/helpers/apps.ts, so that the answers can be compared with tollgate/express.
@Controller()
class BillingController {
  @Get(ROUTE)
  list(@Auth() auth: Admission | undefined) {
    return describeAuth(auth)
  }
  @Post(ROUTE)
  @HttpCode(200)
  create(@Auth() auth: Admission | undefined) {
    return describeAuth(auth)
  }
  @Get('scoped')
  @RequireScopes('billing:read')
  scoped(@Auth() auth: Admission) {
    return describeAuth(auth)
  }
  @Get(TWO_SCOPES_PATH)
  @RequireScopes('billing:read', 'billing:write')
  twoScopes(@Auth() auth: Admission) {
    return describeAuth(auth)
  }
  @Get('any-scope')
  @RequireAnyScope('billing:read', 'billing:admin')
  anyScope(@Auth() auth: Admission) {
    return describeAuth(auth)
  }
  @Get('realm-role')
  @RequireRealmRoles('admin')
  realmRole(@Auth() auth: Admission) {
    return describeAuth(auth)
  }
  @Get('client-role')
  @RequireClientRoles('office', 'editor')
  clientRole(@Auth() auth: Admission) {
    return describeAuth(auth)
  }
  @Public()
  @Get('public')
  open(@Auth() auth: Admission | undefined) {
    return { public: true, ...describeAuth(auth) }
  }
}

// A decorator on the class applies to every handler; one on a handler adds to it.
@Controller('reports')
@RequireScopes('reports:read')
class ReportsController {
  @Get()
  list() {
    return { reports: [] }
  }
  @Get('export')
  @RequireScopes('reports:export')
  export() {
    return { exported: true }
  }
}

@Public()
@Controller('status')
class StatusController {
  @Get()
  status(@Auth() auth: Admission | undefined) {
    return { up: true, ...describeAuth(auth) }
  }
}

// With `globalGuard: false`: guarded only where the application says so.
@Controller('open')
class OpenController {
  @Get()
  open() {
    return { guarded: false }
  }
}
@Controller('guarded')
@UseGuards(TollgateGuard)
class GuardedController {
  @Get()
  guarded(@Auth() auth: Admission) {
    return describeAuth(auth)
  }
}

/** The application's own filter, for `errorHandling: 'framework'`. */
@Catch(TollgateError)
class AppFilter implements ExceptionFilter<TollgateError> {
  catch(error: TollgateError, host: ArgumentsHost) {
    const response = host.switchToHttp().getResponse<Record<string, unknown>>()
    const body = { handledBy: 'app', code: error.code }
    // Either platform's response: Express's `status().json()`, Fastify's `code().send()`.
    if (typeof response['code'] === 'function') {
      const reply = response as unknown as {
        code(status: number): { headers(h: object): { send(b: object): void } }
      }
      reply.code(error.status).headers(error.headers).send(body)
    } else {
      const res = response as unknown as {
        status(status: number): { set(h: object): { json(b: object): void } }
      }
      res.status(error.status).set(error.headers).json(body)
    }
  }
}

const ALL_CONTROLLERS = [BillingController, ReportsController, StatusController]

async function createNestApp(
  platform: PlatformName,
  gateOptions: GateOptions,
  setup: {
    moduleOptions?: TollgateModuleOptions
    controllers?: Array<new () => unknown>
    filter?: ExceptionFilter
    prefix?: string
  } = {},
): Promise<INestApplication> {
  const imports: DynamicModule[] = [TollgateModule.forRoot(gateOptions, setup.moduleOptions)]
  @Module({ imports, controllers: setup.controllers ?? ALL_CONTROLLERS })
  class TestModule {}
  const adapter = platform === 'express' ? new ExpressAdapter() : new FastifyAdapter()
  const app = await NestFactory.create(TestModule, adapter, { logger: false })
  if (setup.filter !== undefined) app.useGlobalFilters(setup.filter)
  if (setup.prefix !== undefined) app.setGlobalPrefix(setup.prefix)
  await app.init()
  if (platform === 'fastify') await (adapter as FastifyAdapter).getInstance().ready()
  return app
}

const INVALID_TOKEN = {
  challenge: 'Bearer realm="api", error="invalid_token", error_description="invalid token"',
  body: { error: 'invalid_token', error_description: 'invalid token' },
}

describe.each(PLATFORMS)('tollgate/nestjs on the %s platform', (platform) => {
  let app: INestApplication
  let server: Server
  beforeAll(async () => {
    app = await createNestApp(platform, options)
    server = app.getHttpServer() as Server
  })
  afterAll(async () => {
    await app.close()
  })

  it('answers 401 with a bare challenge and a JSON body when no credentials are sent', async () => {
    const res = await request(server).get(ROUTE)
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toBe('Bearer realm="api"')
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(res.headers['cache-control']).toBe('no-store')
    expect(res.body).toEqual({ error: 'unauthorized', error_description: 'bearer token required' })
  })

  it('admits a valid token and gives the admission to @Auth()', async () => {
    const token = await issuer.mint({ sub: 'alice', azp: 'billing-ui' })
    const res = await request(server).get(ROUTE).set('Authorization', `Bearer ${token}`)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({
      authenticated: true,
      subject: 'alice',
      clientId: 'billing-ui',
      issuer: issuer.issuer('acme'),
    })
  })

  it('answers 401 token expired for an expired token', async () => {
    const token = await issuer.mint({ exp: Math.floor(Date.now() / 1000) - 60 })
    const res = await request(server).get(ROUTE).set('Authorization', `Bearer ${token}`)
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toBe(
      'Bearer realm="api", error="invalid_token", error_description="token expired"',
    )
    expect(res.body).toEqual({ error: 'invalid_token', error_description: 'token expired' })
  })

  it('answers 401 invalid_token for a forged signature', async () => {
    const [header, payload] = (await issuer.mint()).split('.')
    const forged = (await issuer.mint({ sub: 'mallory' })).split('.')[2]
    const res = await request(server)
      .get(ROUTE)
      .set('Authorization', `Bearer ${header}.${payload}.${forged}`)
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toBe(INVALID_TOKEN.challenge)
    expect(res.body).toEqual(INVALID_TOKEN.body)
  })

  it('answers 401 invalid_token for a token issued for another audience', async () => {
    const token = await issuer.mint({ aud: 'office' })
    const res = await request(server).get(ROUTE).set('Authorization', `Bearer ${token}`)
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toBe(INVALID_TOKEN.challenge)
    expect(res.body).toEqual(INVALID_TOKEN.body)
  })

  it('answers 400 invalid_request for a malformed Authorization field', async () => {
    const res = await request(server).get(ROUTE).set('Authorization', 'Bearer')
    expect(res.status).toBe(400)
    expect(res.headers['www-authenticate']).toContain('error="invalid_request"')
    expect(res.body.error).toBe('invalid_request')
  })

  it('answers 400 invalid_request for a token also sent in a form body', async () => {
    const token = await issuer.mint()
    const res = await request(server)
      .post(ROUTE)
      .set('Authorization', `Bearer ${token}`)
      .type('form')
      .send({ access_token: token })
    expect(res.status).toBe(400)
    expect(res.body.error).toBe('invalid_request')
  })

  it('answers 403 insufficient_scope with the scope @RequireScopes needs', async () => {
    const token = await issuer.mint({ scope: 'openid profile' })
    const res = await request(server).get('/scoped').set('Authorization', `Bearer ${token}`)
    expect(res.status).toBe(403)
    expect(res.headers['www-authenticate']).toBe(
      'Bearer realm="api", error="insufficient_scope", error_description="insufficient scope", scope="billing:read"',
    )
    expect(res.body).toEqual({
      error: 'insufficient_scope',
      error_description: 'insufficient scope',
    })
  })

  it('requires both scopes of @RequireScopes(a, b): one of them gets 403, both get 200', async () => {
    const one = await issuer.mint({ scope: 'billing:read' })
    const refused = await request(server).get(TWO_SCOPES_PATH).set('Authorization', `Bearer ${one}`)
    expect(refused.status).toBe(403)
    expect(refused.headers['www-authenticate']).toContain('scope="billing:read billing:write"')
    const both = await issuer.mint({ scope: 'billing:read billing:write' })
    const admitted = await request(server)
      .get(TWO_SCOPES_PATH)
      .set('Authorization', `Bearer ${both}`)
    expect(admitted.status).toBe(200)
    expect(admitted.body.scopes).toEqual(['billing:read', 'billing:write'])
  })

  it('checks @RequireAnyScope, @RequireRealmRoles and @RequireClientRoles', async () => {
    const admin = await issuer.mint({
      scope: 'billing:admin',
      realm_access: { roles: ['admin'] },
      resource_access: { office: { roles: ['editor'] } },
    })
    const nobody = await issuer.mint({ scope: 'openid' })
    for (const path of ['/any-scope', '/realm-role', '/client-role']) {
      const admitted = await request(server).get(path).set('Authorization', `Bearer ${admin}`)
      expect(admitted.status, path).toBe(200)
      const refused = await request(server).get(path).set('Authorization', `Bearer ${nobody}`)
      expect(refused.status, path).toBe(403)
      expect(refused.headers['www-authenticate'], path).toContain('error="insufficient_scope"')
    }
  })

  it('applies a controller decorator to every handler and a handler decorator on top of it', async () => {
    const reader = await issuer.mint({ scope: 'reports:read' })
    const exporter = await issuer.mint({ scope: 'reports:read reports:export' })
    const none = await issuer.mint({ scope: 'openid' })
    const get = (path: string, token: string) =>
      request(server).get(path).set('Authorization', `Bearer ${token}`)
    expect((await get('/reports', none)).status).toBe(403)
    expect((await get('/reports', reader)).status).toBe(200)
    const refused = await get('/reports/export', reader)
    expect(refused.status).toBe(403)
    expect(refused.headers['www-authenticate']).toContain('scope="reports:export"')
    expect((await get('/reports/export', exporter)).status).toBe(200)
    // The controller's decorators run first: a token with neither scope is told the class's.
    const neither = await get('/reports/export', none)
    expect(neither.headers['www-authenticate']).toContain('scope="reports:read"')
  })

  it('lets @Public() routes through without reading the token: no challenge, @Auth() undefined', async () => {
    const anonymous = await request(server).get('/public')
    expect(anonymous.status).toBe(200)
    expect(anonymous.body).toEqual({ public: true, authenticated: false })
    const garbage = await request(server).get('/public').set('Authorization', 'Bearer a.b.c')
    expect(garbage.status).toBe(200)
    expect(garbage.headers['www-authenticate']).toBeUndefined()
    const controller = await request(server).get('/status')
    expect(controller.status).toBe(200)
    expect(controller.body).toEqual({ up: true, authenticated: false })
  })

  it('refuses a context that is not HTTP (a microservice handler) unless it is @Public()', async () => {
    const guard = app.get(TollgateGuard)
    const rpc = (handler: (...args: never[]) => unknown, controller: new () => unknown) => {
      const context = new ExecutionContextHost([{}, {}], controller, handler)
      context.setType('rpc')
      return context
    }
    const billing = BillingController.prototype
    expect(await guard.canActivate(rpc(billing.list, BillingController))).toBe(false)
    expect(await guard.canActivate(rpc(billing.open, BillingController))).toBe(true)
    const status = StatusController.prototype
    expect(await guard.canActivate(rpc(status.status, StatusController))).toBe(true)
  })

  it('provides the gate under TOLLGATE_GATE for operations', async () => {
    const gate = app.get(TOLLGATE_GATE)
    expect((await gate.ready()).ready).toBe(true)
  })
})

describe.each(PLATFORMS)('tollgate/nestjs on the %s platform, configured', (platform) => {
  it('answers 429 with Retry-After and the rate-limit fields once the tenant is out of points', async () => {
    const app = await createNestApp(platform, {
      ...options,
      tenant: { claim: 'tenant' },
      rateLimit: { plans: { free: [{ points: 2, durationSeconds: 60 }] }, defaultPlan: 'free' },
    })
    const token = await issuer.mint({ tenant: 'initech' })
    // @Public() routes spend no point, whatever they are sent.
    for (let i = 0; i < 3; i++) {
      await request(app.getHttpServer())
        .get('/public')
        .set('Authorization', `Bearer ${token}`)
        .expect(200)
    }
    const get = () =>
      request(app.getHttpServer()).get(ROUTE).set('Authorization', `Bearer ${token}`)
    const first = await get()
    expect(first.status).toBe(200)
    expect(first.headers['ratelimit-policy']).toBe('"free";q=2;w=60')
    expect(first.headers['ratelimit']).toMatch(/^"free";r=1;t=\d+$/)
    await get().expect(200)
    const res = await get()
    expect(res.status).toBe(429)
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(60)
    expect(res.headers['ratelimit-policy']).toBe('"free";q=2;w=60')
    expect(res.headers['ratelimit']).toMatch(/^"free";r=0;t=\d+$/)
    expect(res.headers['www-authenticate']).toBeUndefined()
    expect(res.body).toEqual({ error: 'rate_limited', error_description: 'rate limit exceeded' })
    await app.close()
  })

  it('answers 503 with Retry-After, not 401, when no signing keys can be fetched', async () => {
    const down = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
    const token = await down.mint()
    await down.stop()
    const app = await createNestApp(platform, {
      issuers: keycloak({ authUrl: down.url, realms: ['acme'] }),
      audience: 'gateway',
    })
    const res = await request(app.getHttpServer())
      .get(ROUTE)
      .set('Authorization', `Bearer ${token}`)
    expect(res.status).toBe(503)
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    expect(res.headers['www-authenticate']).toBeUndefined()
    expect(res.body).toEqual({
      error: 'temporarily_unavailable',
      error_description: 'signing keys unavailable',
    })
    await app.close()
    await down.close()
  })

  it("hands refusals, the guards' too, to the application's filters with errorHandling: framework", async () => {
    const app = await createNestApp(
      platform,
      { ...options, realm: 'shop', errorHandling: 'framework' },
      { filter: new AppFilter() },
    )
    const anonymous = await request(app.getHttpServer()).get(ROUTE)
    expect(anonymous.status).toBe(401)
    expect(anonymous.headers['www-authenticate']).toBe('Bearer realm="shop"')
    expect(anonymous.body).toEqual({ handledBy: 'app', code: 'ERR_TOKEN_MISSING' })
    const token = await issuer.mint({ scope: 'openid' })
    const scoped = await request(app.getHttpServer())
      .get('/scoped')
      .set('Authorization', `Bearer ${token}`)
    expect(scoped.status).toBe(403)
    expect(scoped.body).toEqual({ handledBy: 'app', code: 'ERR_INSUFFICIENT_SCOPE' })
    await app.close()
  })

  it("leaves framework-mode refusals to Nest's default filter: the error's status, with its headers set by the guard", async () => {
    const app = await createNestApp(platform, { ...options, errorHandling: 'framework' })
    const res = await request(app.getHttpServer()).get(ROUTE)
    expect(res.status).toBe(401)
    // The guard sets the challenge on the response before it throws: a filter that sets only the
    // status and a body (Nest's own included) answers with it.
    expect(res.headers['www-authenticate']).toBe('Bearer realm="api"')
    expect(res.body).toEqual({ statusCode: 401, message: 'bearer token required' })
    await app.close()
  })

  it('decides once on a request the global guard and @UseGuards(TollgateGuard) both guard', async () => {
    const app = await createNestApp(
      platform,
      {
        ...options,
        tenant: { claim: 'tenant' },
        rateLimit: { plans: { free: [{ points: 2, durationSeconds: 60 }] }, defaultPlan: 'free' },
      },
      { controllers: [GuardedController] },
    )
    const token = await issuer.mint({ tenant: 'twice' })
    const get = () =>
      request(app.getHttpServer()).get('/guarded').set('Authorization', `Bearer ${token}`)
    const first = await get()
    expect(first.status).toBe(200)
    expect(first.headers['ratelimit']).toMatch(/^"free";r=1;t=\d+$/)
    expect((await get()).status).toBe(200)
    expect((await get()).status).toBe(429)
    await app.close()
  })

  it('gives @Auth() undefined with credentialsRequired: false and no credentials', async () => {
    const app = await createNestApp(platform, { ...options, credentialsRequired: false })
    await request(app.getHttpServer()).get(ROUTE).expect(200, { authenticated: false })
    await app.close()
  })

  it('with globalGuard: false, guards only the controllers under @UseGuards(TollgateGuard)', async () => {
    const app = await createNestApp(platform, options, {
      moduleOptions: { globalGuard: false },
      controllers: [OpenController, GuardedController],
    })
    const server = app.getHttpServer() as Server
    await request(server).get('/open').expect(200, { guarded: false })
    const refused = await request(server).get('/guarded')
    expect(refused.status).toBe(401)
    expect(refused.headers['www-authenticate']).toBe('Bearer realm="api"')
    const token = await issuer.mint({ sub: 'bob' })
    const admitted = await request(server).get('/guarded').set('Authorization', `Bearer ${token}`)
    expect(admitted.status).toBe(200)
    expect(admitted.body.subject).toBe('bob')
    await app.close()
  })
})

const METADATA_PATH = '/.well-known/oauth-protected-resource/api/v1/billing'
const CALLBACK_PATHS = { backchannelLogout: LOGOUT_PATH, keycloakPushNotBefore: PUSH_PATH }
const postForm = (server: Server, path: string, fields: Record<string, string>) =>
  request(server).post(path).type('form').send(fields)

describe.each(PLATFORMS)(
  'tollgate/nestjs on the %s platform, endpoints without a token',
  (platform) => {
    let endpointOptions: GateOptions
    beforeAll(() => {
      endpointOptions = {
        ...options,
        resourceMetadata: { resource: 'https://api.example.test/api/v1/billing' },
        revocation: { callbacks: { clientIds: 'gateway' } },
      }
    })

    it('serves the metadata document and the callbacks at their own paths, whatever the global prefix', async () => {
      const app = await createNestApp(platform, endpointOptions, {
        moduleOptions: { callbacks: CALLBACK_PATHS },
        prefix: 'v2',
      })
      const server = app.getHttpServer() as Server
      const metadata = await request(server).get(METADATA_PATH)
      expect(metadata.status).toBe(200)
      expect(metadata.body.resource).toBe('https://api.example.test/api/v1/billing')
      expect((await request(server).get(`/v2${METADATA_PATH}`)).status).toBe(404)
      // The routes move under the prefix; the challenge still names the document at the root.
      const refused = await request(server).get(`/v2${ROUTE}`)
      expect(refused.status).toBe(401)
      expect(refused.headers['www-authenticate']).toBe(
        `Bearer realm="api", resource_metadata="https://api.example.test${METADATA_PATH}"`,
      )
      const token = await issuer.mint({
        sid: 'nest-prefix',
        iat: Math.floor(Date.now() / 1000) - 10,
      })
      await request(server).get(`/v2${ROUTE}`).set('Authorization', `Bearer ${token}`).expect(200)
      const logout = await postForm(server, LOGOUT_PATH, {
        logout_token: await issuer.mintLogoutToken({ sid: 'nest-prefix' }),
      })
      expect(logout.status).toBe(200)
      expect(logout.headers['cache-control']).toBe('no-store')
      expect(logout.text).toBe('')
      expect(
        (await request(server).get(`/v2${ROUTE}`).set('Authorization', `Bearer ${token}`)).status,
      ).toBe(401)
      await app.close()
    })

    it('serves the callbacks at their URL with a query string, as providers may send it', async () => {
      const app = await createNestApp(platform, endpointOptions, {
        moduleOptions: { callbacks: CALLBACK_PATHS },
      })
      const server = app.getHttpServer() as Server
      const token = await issuer.mint({
        sid: 'nest-query',
        iat: Math.floor(Date.now() / 1000) - 10,
      })
      await request(server).get(ROUTE).set('Authorization', `Bearer ${token}`).expect(200)
      const logout = await postForm(server, `${LOGOUT_PATH}?client=gateway&x=%2F`, {
        logout_token: await issuer.mintLogoutToken({ sid: 'nest-query' }),
      })
      // The callback's own answer, not the guard's 401 for a request without a token.
      expect(logout.status).toBe(200)
      expect(logout.headers['www-authenticate']).toBeUndefined()
      expect(
        (await request(server).get(ROUTE).set('Authorization', `Bearer ${token}`)).status,
      ).toBe(401)
      // A refused token there gets the callback's 400, not the guard's 401.
      const forged = await postForm(server, `${LOGOUT_PATH}?x=1`, { logout_token: 'a.b.c' })
      expect(forged.status).toBe(400)
      expect(forged.body).toEqual({
        error: 'invalid_request',
        error_description: 'invalid logout token',
      })
      await app.close()
    })

    it('serves the callbacks for POST only: a GET of their path is an ordinary request', async () => {
      const app = await createNestApp(platform, endpointOptions, {
        moduleOptions: { callbacks: CALLBACK_PATHS },
      })
      const res = await request(app.getHttpServer()).get(LOGOUT_PATH)
      // No route of the application there: Nest's own 404, neither the callback's 405 nor a 401.
      expect(res.status).toBe(404)
      await app.close()
    })

    it('serves no callback without moduleOptions.callbacks, and only those it names', async () => {
      const none = await createNestApp(platform, endpointOptions)
      const res = await postForm(none.getHttpServer() as Server, LOGOUT_PATH, {
        logout_token: await issuer.mintLogoutToken({ sid: 'nest-none' }),
      })
      expect(res.status).toBe(404)
      await none.close()
      const one = await createNestApp(platform, endpointOptions, {
        moduleOptions: { callbacks: { backchannelLogout: LOGOUT_PATH } },
      })
      const server = one.getHttpServer() as Server
      expect((await request(server).post(PUSH_PATH).send('x')).status).toBe(404)
      expect((await postForm(server, LOGOUT_PATH, { logout_token: 'x' })).status).toBe(400)
      await one.close()
    })

    it("leaves a body over the platform's limit to Nest, which answers 413, and goes on serving", async () => {
      const app = await createNestApp(platform, endpointOptions, {
        moduleOptions: { callbacks: CALLBACK_PATHS },
      })
      const server = app.getHttpServer() as Server
      // Nest's parsers read up to 100 KB on Express (body-parser), 1 MiB on Fastify (bodyLimit).
      const size = platform === 'express' ? 200_000 : 2_000_000
      const res = await postForm(server, LOGOUT_PATH, { logout_token: 'a'.repeat(size) })
      expect(res.status).toBe(413)
      expect(res.body.statusCode).toBe(413)
      // Under Fastify's limit, over Express's: the callback decides on Fastify.
      const under = await postForm(server, LOGOUT_PATH, { logout_token: 'a'.repeat(200_000) })
      expect(under.status).toBe(platform === 'express' ? 413 : 400)
      if (platform === 'fastify') expect(under.body.error_description).toBe('invalid logout token')
      // Malformed JSON: Nest's parser answers, as on any route.
      const json = await request(server)
        .post(PUSH_PATH)
        .set('Content-Type', 'application/json')
        .send('{"action":')
      expect(json.status).toBe(400)
      expect(json.body.statusCode).toBe(400)
      const next = await postForm(server, LOGOUT_PATH, {
        logout_token: await issuer.mintLogoutToken({ sid: 'nest-after-413' }),
      })
      expect(next.status).toBe(200)
      await app.close()
    })
  },
)

describe('TollgateModule.forRoot', () => {
  it('fails at start-up, naming the option, on invalid gate or module options', () => {
    expect(() => TollgateModule.forRoot({ ...options, algorithms: ['HS256' as never] })).toThrow(
      TypeError,
    )
    expect(() => TollgateModule.forRoot(options, { global: true } as never)).toThrow(
      'TollgateModule.forRoot(options, moduleOptions): "moduleOptions.global" is not an option; use one of: globalGuard',
    )
    expect(() => TollgateModule.forRoot(options, { globalGuard: 'yes' as never })).toThrow(
      '"moduleOptions.globalGuard" must be a boolean',
    )
  })

  it('fails at start-up, naming the option, on callback paths it cannot serve', () => {
    const withCallbacks: GateOptions = {
      ...options,
      revocation: { callbacks: { clientIds: 'gateway' } },
    }
    expect(() => TollgateModule.forRoot(options, { callbacks: CALLBACK_PATHS })).toThrow(
      'TollgateModule.forRoot(options, moduleOptions): "moduleOptions.callbacks" needs the gate option "revocation.callbacks" ({ clientIds })',
    )
    expect(() =>
      TollgateModule.forRoot(withCallbacks, { callbacks: { backchannelLogout: 'logout' } }),
    ).toThrow(
      `TollgateModule.forRoot(options, moduleOptions): "moduleOptions.callbacks.backchannelLogout" must be a path starting with '/', without query or fragment (got 'logout')`,
    )
    expect(() =>
      TollgateModule.forRoot(withCallbacks, { callbacks: { logout: '/logout' } as never }),
    ).toThrow(
      '"moduleOptions.callbacks.logout" is not an option; use one of: backchannelLogout, keycloakPushNotBefore',
    )
    expect(() =>
      TollgateModule.forRoot(withCallbacks, {
        callbacks: { backchannelLogout: '/k', keycloakPushNotBefore: '/k' },
      }),
    ).toThrow(
      `"moduleOptions.callbacks.keycloakPushNotBefore" names the path of the other callback (got '/k')`,
    )
  })

  it("throws refusals as an HttpException with the core's status and body, carrying its answer", () => {
    const error = new TokenMissingError()
    const refusal = new TollgateRefusal(error)
    expect(refusal).toBeInstanceOf(HttpException)
    expect(refusal.getStatus()).toBe(401)
    expect(refusal.getResponse()).toEqual({
      error: 'unauthorized',
      error_description: 'bearer token required',
    })
    expect(refusal.answer).toEqual(renderError(error))
    expect(refusal.cause).toBe(error)
  })

  it('builds in a standalone application context, which has no HTTP platform', async () => {
    @Module({ imports: [TollgateModule.forRoot(options)] })
    class ScriptModule {}
    const context = await NestFactory.createApplicationContext(ScriptModule, {
      logger: false,
      abortOnError: false,
    })
    expect(context.get(TOLLGATE_GATE).realm).toBe('api')
    await context.close()
  })

  it('fails at start-up on an HTTP platform other than Express and Fastify', async () => {
    class OtherAdapter extends ExpressAdapter {
      override getType() {
        return 'other'
      }
    }
    @Module({ imports: [TollgateModule.forRoot(options)], controllers: [StatusController] })
    class OtherModule {}
    await expect(
      NestFactory.create(OtherModule, new OtherAdapter(), { logger: false, abortOnError: false }),
    ).rejects.toThrow(
      'tollgate/nestjs: the HTTP platform "other" is not supported; use @nestjs/platform-express or @nestjs/platform-fastify',
    )
  })

  it('refuses a scope a challenge could not carry when the decorator is applied', () => {
    expect(() => RequireScopes('billing read')).toThrow(TypeError)
  })
})

describe('tollgate/nestjs and tollgate/express', () => {
  // Transport fields each server sets its own way; everything else must be the same bytes.
  const TRANSPORT = new Set(['date', 'connection', 'keep-alive', 'x-powered-by'])
  const answerOf = (res: request.Response) => ({
    status: res.status,
    headers: Object.fromEntries(
      Object.entries(res.headers)
        .filter(([name]) => !TRANSPORT.has(name))
        .map(([name, value]) => [
          name,
          name === 'ratelimit' ? value.replace(/t=\d+/, 't=?') : value,
        ])
        .sort(([a], [b]) => String(a).localeCompare(String(b))),
    ),
    body: res.text,
  })
  const expressApp = APPS.find(([name]) => name === 'express 5')?.[1]

  it('give identical status, headers and body for the same requests', async () => {
    const valid = await issuer.mint({ sub: 'same' })
    const expired = await issuer.mint({ exp: 1 })
    const oneScope = await issuer.mint({ scope: 'billing:read' })
    const cases: Array<readonly [string, Record<string, string>]> = [
      [ROUTE, {}],
      [ROUTE, { Authorization: 'Basic x' }],
      [ROUTE, { Authorization: 'Bearer' }],
      [ROUTE, { Authorization: 'Bearer a.b.c' }],
      [ROUTE, { Authorization: `Bearer ${valid} x` }],
      [ROUTE, { Authorization: `Bearer ${expired}` }],
      [`${ROUTE}?access_token=${valid}`, { Authorization: `Bearer ${valid}` }],
      [TWO_SCOPES_PATH, { Authorization: `Bearer ${oneScope}` }],
      ['/client-role', { Authorization: `Bearer ${oneScope}` }],
    ]
    // An anonymous request to a guarded route is refused by the Express app's middleware before
    // the route is known, and by Nest's guard knowing the route's decorators, which names their
    // scopes: test/adapters/challenge-scope.test.ts compares guards that know their route.
    const reference = expressApp!(options)
    const nest = await Promise.all(PLATFORMS.map((platform) => createNestApp(platform, options)))
    for (const [path, headers] of cases) {
      const expected = answerOf(await request(reference).get(path).set(headers))
      for (const app of nest) {
        const res = await request(app.getHttpServer()).get(path).set(headers)
        expect(answerOf(res), `${path} ${JSON.stringify(headers)}`).toEqual(expected)
      }
    }
    reference.close()
    await Promise.all(nest.map((app) => app.close()))
  })

  it('give identical answers to the provider callbacks, whatever the body they are sent', async () => {
    const withCallbacks: GateOptions = {
      ...options,
      revocation: { callbacks: { clientIds: 'gateway' } },
    }
    const forged = `${(await issuer.mintLogoutToken({ sid: 'x' })).slice(0, -4)}AAAA`
    const form = 'application/x-www-form-urlencoded'
    // Bodies the callback itself decides on, parsed by the platform's parser or read by the core.
    const cases: Array<readonly [string, string | undefined, string]> = [
      [LOGOUT_PATH, form, `logout_token=${forged}`],
      [LOGOUT_PATH, form, `logout_token=${'a'.repeat(20_000)}`],
      [LOGOUT_PATH, form, 'logout_token=a&logout_token=b'],
      [LOGOUT_PATH, form, 'logout_token[x]=a'],
      [LOGOUT_PATH, form, 'logout_token=%ZZ%E0'],
      [LOGOUT_PATH, 'text/plain', `logout_token=${forged}`],
      [LOGOUT_PATH, 'application/json', `{"logout_token":"${forged}"}`],
      [LOGOUT_PATH, 'application/jwt', forged],
      [LOGOUT_PATH, undefined, forged],
      [PUSH_PATH, 'text/plain', forged],
      [PUSH_PATH, 'application/jwt', forged],
      [PUSH_PATH, form, `logout_token=${forged}`],
      [PUSH_PATH, 'application/json', '{"a":1}'],
      [PUSH_PATH, undefined, 'x'.repeat(20_000)],
    ]
    const reference = expressApp!(withCallbacks)
    const nest = await Promise.all(
      PLATFORMS.map((platform) =>
        createNestApp(platform, withCallbacks, { moduleOptions: { callbacks: CALLBACK_PATHS } }),
      ),
    )
    const post = (server: Server, [path, type, body]: (typeof cases)[number]) => {
      const req = request(server).post(path)
      return (type === undefined ? req : req.set('Content-Type', type)).send(body)
    }
    for (const sent of cases) {
      const expected = answerOf(await post(reference, sent))
      expect(expected.status).toBe(400)
      for (const app of nest) {
        const res = await post(app.getHttpServer() as Server, sent)
        expect(answerOf(res), `${sent[0]} ${sent[1]} ${sent[2].slice(0, 40)}`).toEqual(expected)
      }
    }
    reference.close()
    await Promise.all(nest.map((app) => app.close()))
  })

  it('admit DPoP-bound tokens and refuse bad proofs with identical answers', async () => {
    const base = 'https://api.example.test'
    const dpop: GateOptions = { ...options, dpop: { mode: 'allowed', publicBaseUrl: base } }
    const key = await createDpopKey('ES256')
    const token = await issuer.mint({ sub: 'bound' }, { dpop: key })
    const reference = expressApp!(dpop)
    const nest = await Promise.all(PLATFORMS.map((platform) => createNestApp(platform, dpop)))
    for (const server of [reference, ...nest.map((app) => app.getHttpServer() as Server)]) {
      const headers = await key.headers(token, { method: 'GET', url: `${base}${ROUTE}` })
      const admitted = await request(server).get(ROUTE).set(headers)
      expect(admitted.status).toBe(200)
      expect(admitted.body.subject).toBe('bound')
      // The same proof again: a replay.
      expect((await request(server).get(ROUTE).set(headers)).status).toBe(401)
    }
    const refusals = [
      { method: 'GET', url: `${base}/other` },
      { method: 'POST', url: `${base}${ROUTE}` },
    ] as const
    for (const target of refusals) {
      const headers = await key.headers(token, target)
      const expected = answerOf(await request(reference).get(ROUTE).set(headers))
      expect(expected.headers['www-authenticate']).toContain('error="invalid_dpop_proof"')
      for (const app of nest) {
        // A fresh proof per server: each keeps its own replay cache.
        const fresh = await key.headers(token, target)
        const res = await request(app.getHttpServer()).get(ROUTE).set(fresh)
        expect(answerOf(res), `${target.method} ${target.url}`).toEqual(expected)
      }
    }
    reference.close()
    await Promise.all(nest.map((app) => app.close()))
  })

  it('give identical 429 answers, rate-limit fields included', async () => {
    const limited: GateOptions = {
      ...options,
      tenant: { claim: 'tenant' },
      rateLimit: { windows: [{ points: 1, durationSeconds: 3600 }] },
    }
    const token = await issuer.mint({ tenant: 'same' })
    const answers = []
    const reference = expressApp!(limited)
    const nest = await Promise.all(PLATFORMS.map((platform) => createNestApp(platform, limited)))
    for (const server of [reference, ...nest.map((app) => app.getHttpServer() as Server)]) {
      await request(server).get(ROUTE).set('Authorization', `Bearer ${token}`).expect(200)
      const res = await request(server).get(ROUTE).set('Authorization', `Bearer ${token}`)
      expect(res.status).toBe(429)
      const answer = answerOf(res)
      // Seconds left in the window: the same unless a second ticked between the requests.
      answer.headers['retry-after'] = Number(answer.headers['retry-after']) > 3590
      answers.push(answer)
    }
    for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0])
    reference.close()
    await Promise.all(nest.map((app) => app.close()))
  })
})

/** The guide's sample under `heading`, and the file in ./samples/ that the test runs. */
function guideSample(heading: string, file: string) {
  const guide = readFileSync(new URL('../../docs/frameworks/nestjs.md', import.meta.url), 'utf8')
  const sample = extractSamples('docs/frameworks/nestjs.md', guide).find(
    (s) => s.heading === heading,
  )
  return {
    inGuide: sample?.code,
    file: readFileSync(new URL(`./samples/${file}`, import.meta.url), 'utf8'),
  }
}

async function startSample(platform: PlatformName, module: new () => unknown) {
  const adapter = platform === 'express' ? new ExpressAdapter() : new FastifyAdapter()
  const app = await NestFactory.create(module, adapter, { logger: false })
  await app.init()
  if (platform === 'fastify') await (adapter as FastifyAdapter).getInstance().ready()
  return app
}

describe('the guide samples of the endpoints served without a token', () => {
  it('are the files the tests run, word for word', () => {
    const metadata = guideSample('Protected resource metadata (RFC 9728)', 'nestjs-metadata.ts')
    expect(metadata.inGuide).toBe(metadata.file)
    const revocation = guideSample(
      "Revocation: back-channel logout and Keycloak's push not-before",
      'nestjs-revocation.ts',
    )
    expect(revocation.inGuide).toBe(revocation.file)
  })

  it.each(PLATFORMS)(
    'serve the metadata document on the %s platform as the guide says',
    async (platform) => {
      process.env['KEYCLOAK_URL'] = issuer.url
      const { AppModule } = await import('./samples/nestjs-metadata.js')
      const app = await startSample(platform, AppModule)
      const server = app.getHttpServer() as Server
      const document = await request(server).get('/.well-known/oauth-protected-resource/mcp')
      expect(document.status).toBe(200)
      expect(document.headers['cache-control']).toBe('public, max-age=3600')
      expect(document.body).toEqual({
        resource: 'https://api.example.com/mcp',
        authorization_servers: [issuer.issuer('acme')],
        scopes_supported: ['mcp:tools'],
        bearer_methods_supported: ['header'],
      })
      const head = await request(server).head('/.well-known/oauth-protected-resource/mcp?x=1')
      expect(head.status).toBe(200)
      const refused = await request(server).get('/mcp')
      expect(refused.status).toBe(401)
      expect(refused.headers['www-authenticate']).toBe(
        'Bearer realm="api", scope="mcp:tools", resource_metadata="https://api.example.com/.well-known/oauth-protected-resource/mcp"',
      )
      const token = await issuer.mint({
        sub: 'dana',
        aud: 'https://api.example.com/mcp',
        scope: 'mcp:tools',
      })
      await request(server)
        .get('/mcp')
        .set('Authorization', `Bearer ${token}`)
        .expect(200, { subject: 'dana', tools: [] })
      await app.close()
    },
  )

  it.each(PLATFORMS)(
    'serve the revocation callbacks on the %s platform as the guide says',
    async (platform) => {
      process.env['KEYCLOAK_URL'] = issuer.url
      const { AppModule } = await import('./samples/nestjs-revocation.js')
      const app = await startSample(platform, AppModule)
      const server = app.getHttpServer() as Server
      const now = Math.floor(Date.now() / 1000)
      const get = (token: string) =>
        request(server).get('/invoices').set('Authorization', `Bearer ${token}`)
      const session = await issuer.mint({ sub: 'erin', sid: `guide-${platform}`, iat: now - 10 })
      expect((await get(session)).status).toBe(200)
      const logout = await postForm(server, '/backchannel-logout', {
        logout_token: await issuer.mintLogoutToken({ sid: `guide-${platform}` }),
      })
      expect(logout.status).toBe(200)
      expect(logout.headers['cache-control']).toBe('no-store')
      expect(logout.text).toBe('')
      expect((await get(session)).status).toBe(401)
      const invalid = await postForm(server, '/backchannel-logout', { logout_token: 'a.b.c' })
      expect(invalid.status).toBe(400)
      expect(invalid.text).toBe(
        '{"error":"invalid_request","error_description":"invalid logout token"}',
      )

      const other = await issuer.mint({ sub: 'frank', iat: now - 10 })
      expect((await get(other)).status).toBe(200)
      const kid = issuer.jwks('acme').keys[0]?.['kid'] as string
      const push = await issuer.sign(
        { alg: 'RS256', typ: 'JWT', kid },
        {
          id: randomUUID(),
          expiration: now + 30,
          resource: 'gateway',
          action: 'PUSH_NOT_BEFORE',
          notBefore: now,
        },
        { kid },
      )
      const pushed = await request(server)
        .post('/keycloak/k_push_not_before')
        .set('Content-Type', 'text/plain')
        .send(push)
      expect(pushed.status).toBe(200)
      expect((await get(other)).status).toBe(401)
      // Keycloak's "Clear" (0): the module, imported once, serves the other platform's run too.
      const clear = await issuer.sign(
        { alg: 'RS256', typ: 'JWT', kid },
        {
          id: randomUUID(),
          expiration: now + 30,
          resource: 'gateway',
          action: 'PUSH_NOT_BEFORE',
          notBefore: 0,
        },
        { kid },
      )
      await request(server)
        .post('/keycloak/k_push_not_before')
        .set('Content-Type', 'text/plain')
        .send(clear)
        .expect(200)
      expect((await get(other)).status).toBe(200)
      await app.close()
    },
  )
})

describe('the guide sample (docs/frameworks/nestjs.md)', () => {
  it("is the guide's first example, word for word", () => {
    const guide = readFileSync(new URL('../../docs/frameworks/nestjs.md', import.meta.url), 'utf8')
    const sample = readFileSync(new URL('./samples/nestjs.ts', import.meta.url), 'utf8')
    expect(guide.match(/```ts\n([\s\S]*?)```/)?.[1]).toBe(sample)
  })

  it.each(PLATFORMS)('runs on the %s platform as the guide says', async (platform) => {
    process.env['KEYCLOAK_URL'] = issuer.url
    const { AppModule } = await import('./samples/nestjs.js')
    const adapter = platform === 'express' ? new ExpressAdapter() : new FastifyAdapter()
    const app = await NestFactory.create(AppModule, adapter, { logger: false })
    await app.init()
    if (platform === 'fastify') await (adapter as FastifyAdapter).getInstance().ready()
    const server = app.getHttpServer() as Server
    await request(server).get('/health').expect(200, { ok: true })
    expect((await request(server).get('/invoices')).status).toBe(401)
    const reader = await issuer.mint({ sub: 'carol', scope: 'billing:read' })
    await request(server)
      .get('/invoices')
      .set('Authorization', `Bearer ${reader}`)
      .expect(200, { subject: 'carol', scopes: ['billing:read'] })
    const other = await issuer.mint({ scope: 'openid' })
    expect(
      (await request(server).get('/invoices').set('Authorization', `Bearer ${other}`)).status,
    ).toBe(403)
    await app.close()
  })
})

describe('shutdown', () => {
  it.each(PLATFORMS)(
    'app.close() on the %s platform closes the gate: its revocation subscriber leaves Redis',
    async (platform) => {
      const redis = await startRedisServer()
      try {
        const client = await redis.client()
        const subscribers = async () =>
          String(await client.call('CLIENT', 'LIST', 'TYPE', 'pubsub'))
            .split('\n')
            .filter((line) => line.trim() !== '').length
        // The test Redis persists nothing: the gate says so, here as an event, before ready().
        const events: GateEvent[] = []
        const app = await createNestApp(platform, {
          ...options,
          revocation: { store: { redis: client } },
          onEvent: (event) => events.push(event),
        })
        await app.get<Gate>(TOLLGATE_GATE).ready()
        expect(events.filter((event) => event.type === 'revocation_store_volatile')).toEqual([
          { type: 'revocation_store_volatile', persistence: 'none', loader: false },
        ])
        expect(await subscribers()).toBe(1)
        await app.close()
        await expect.poll(subscribers).toBe(0)
      } finally {
        await redis.stop()
      }
    },
  )
})
