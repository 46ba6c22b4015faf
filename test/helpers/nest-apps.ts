/**
 * NestJS applications protected by tollgate/nestjs, on the Express and on the Fastify platform,
 * serving the routes of `apps.ts` (and its error handler's answers for `errorHandling:
 * 'framework'`) so that the cross-framework suites can compare their answers with the other
 * adapters'. Kept apart from `apps.ts` so that the suites that do not run NestJS do not load it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import {
  All,
  type ArgumentsHost,
  Catch,
  Controller,
  type ExceptionFilter,
  Get,
  HttpCode,
  Module,
  NotFoundException,
  Options,
  Post,
  type Provider,
  UseGuards,
} from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { ExpressAdapter } from '@nestjs/platform-express'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import express from 'express'
import * as expressAdapter from '../../adapters/express/index.js'
import * as fastifyAdapter from '../../adapters/fastify/index.js'
import {
  Auth,
  RequireAcr,
  RequireAnyScope,
  RequireClientRoles,
  RequireRealmRoles,
  RequireRecentSignIn,
  RequireScopes,
  TOLLGATE_GATE,
  TollgateGuard,
  TollgateModule,
} from '../../adapters/nestjs/index.js'
import { TollgateError } from '../../src/errors.js'
import type { Gate } from '../../src/gate/gate.js'
import type { GateOptions } from '../../src/gate/options.js'
import type { Admission } from '../../src/types.js'
import {
  type AppFactory,
  DELEGATED_PATH,
  describeAuth,
  type GuardAppFactory,
  LOGOUT_PATH,
  onBehalf,
  type ProtectedServer,
  PUSH_PATH,
  SECOND_GUARD_SCOPES,
  STEP_UP_ACR,
  STEP_UP_MAX_AGE,
  TWO_SCOPES_PATH,
} from './apps.js'

const ROUTE = '/api/v1/billing/subscriptions'

@Controller()
class ContractController {
  @Get(ROUTE)
  list(@Auth() auth: Admission | undefined) {
    return describeAuth(auth)
  }
  @Post(ROUTE)
  @HttpCode(200)
  create(@Auth() auth: Admission | undefined) {
    return describeAuth(auth)
  }
  @Options(ROUTE)
  @HttpCode(200)
  preflight(@Auth() auth: Admission | undefined) {
    return { preflight: true, ...describeAuth(auth) }
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
  @Get(DELEGATED_PATH.slice(1))
  delegated(@Auth() auth: Admission | undefined) {
    return onBehalf(auth)
  }
  @Get('throws')
  throws() {
    throw new Error('handler failure')
  }
  // The other apps run the gate on every path (a middleware); Nest runs guards on matched routes
  // only. A catch-all route puts every other path behind the guard too, so that an unknown path
  // is refused as elsewhere, and answers Nest's 404 once admitted.
  @All('*')
  unknown(): never {
    throw new NotFoundException()
  }
}

/** The apps' own error handler for `errorHandling: 'framework'`, as in `apps.ts`. */
@Catch(TollgateError)
class AppFilter implements ExceptionFilter<TollgateError> {
  catch(error: TollgateError, host: ArgumentsHost) {
    const response = host.switchToHttp().getResponse<ServerResponse>()
    // Node's own calls: the response of either platform (Express's `res`, Fastify's `reply.raw`).
    const raw = 'raw' in response ? (response.raw as ServerResponse) : response
    raw.statusCode = error.status
    for (const [name, value] of Object.entries(error.headers)) raw.setHeader(name, value)
    raw.setHeader('Content-Type', 'application/json; charset=utf-8')
    raw.end(JSON.stringify({ handledBy: 'app', code: error.code }))
  }
}

/** The gate `forRoot()` built, for the operations tests: the module provides it by value. */
function gateOf(providers: readonly Provider[]): Gate {
  for (const provider of providers) {
    if (
      typeof provider === 'object' &&
      'useValue' in provider &&
      provider.provide === TOLLGATE_GATE
    ) {
      return provider.useValue as Gate
    }
  }
  throw new Error('TollgateModule.forRoot() provides no gate')
}

/** Requests wait for the application to start: the factories are synchronous, Nest is not. */
function waitingFor(
  started: () => Promise<unknown>,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
) {
  return (req: IncomingMessage, res: ServerResponse) => {
    started().then(
      () => handler(req, res),
      (error: unknown) => {
        res.statusCode = 500
        res.end(`the NestJS application did not start: ${String(error)}`)
      },
    )
  }
}

function nestApp(platform: 'express' | 'fastify'): AppFactory {
  return (options: GateOptions): ProtectedServer => {
    const tollgate = TollgateModule.forRoot(
      options,
      options.revocation?.callbacks === undefined
        ? {}
        : { callbacks: { backchannelLogout: LOGOUT_PATH, keycloakPushNotBefore: PUSH_PATH } },
    )
    @Module({ imports: [tollgate], controllers: [ContractController] })
    class ContractModule {}
    const gate = gateOf(tollgate.providers ?? [])
    let started: Promise<unknown>
    if (platform === 'express') {
      const instance = express()
      started = NestFactory.create(ContractModule, new ExpressAdapter(instance), {
        logger: false,
      }).then((app) => app.useGlobalFilters(new AppFilter()).init())
      return Object.assign(createServer(waitingFor(() => started, instance)), { gate })
    }
    const adapter = new FastifyAdapter({
      serverFactory: (handler: (req: IncomingMessage, res: ServerResponse) => void) =>
        createServer(waitingFor(() => started, handler)),
    })
    started = NestFactory.create(ContractModule, adapter, { logger: false })
      .then((app) => app.useGlobalFilters(new AppFilter()).init())
      .then(() => adapter.getInstance().ready())
    return Object.assign(adapter.getHttpServer() as Server, { gate })
  }
}

/** tollgate/nestjs on both of Nest's HTTP platforms, by name, as `APPS` lists the others. */
export const NEST_APPS: ReadonlyArray<readonly [string, AppFactory]> = [
  ['nestjs (express)', nestApp('express')],
  ['nestjs (fastify)', nestApp('fastify')],
]

// The routes of `GUARD_PATHS` (apps.ts; a guard protects its route on its own): decorators alone,
// under @UseGuards(TollgateGuard), and behind another gate (gate B, a middleware of the platform).
@Controller('solo')
class SoloController {
  @Get('scoped')
  @RequireScopes('billing:read')
  scoped(@Auth() auth: Admission) {
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
  @Get('two')
  @RequireScopes('billing:read')
  @RequireAnyScope(...SECOND_GUARD_SCOPES)
  two(@Auth() auth: Admission) {
    return describeAuth(auth)
  }
  @Get('acr')
  @RequireAcr(...STEP_UP_ACR)
  acr(@Auth() auth: Admission) {
    return describeAuth(auth)
  }
  @Get('recent')
  @RequireRecentSignIn(STEP_UP_MAX_AGE)
  recent(@Auth() auth: Admission) {
    return describeAuth(auth)
  }
  @Get('step-up')
  @RequireScopes('billing:read')
  @RequireAcr(...STEP_UP_ACR)
  @RequireRecentSignIn(STEP_UP_MAX_AGE)
  stepUp(@Auth() auth: Admission) {
    return describeAuth(auth)
  }
}

@Controller('gated')
@UseGuards(TollgateGuard)
class GatedController {
  @Get('scoped')
  @RequireScopes('billing:read')
  scoped(@Auth() auth: Admission) {
    return describeAuth(auth)
  }
  @Get('two')
  @RequireScopes('billing:read')
  @RequireAnyScope(...SECOND_GUARD_SCOPES)
  two(@Auth() auth: Admission) {
    return describeAuth(auth)
  }
  @Get('acr')
  @RequireAcr(...STEP_UP_ACR)
  acr(@Auth() auth: Admission) {
    return describeAuth(auth)
  }
  // Under the controller's guard and its own.
  @Get('again')
  @UseGuards(TollgateGuard)
  again(@Auth() auth: Admission) {
    return describeAuth(auth)
  }
}

@Controller('behind-b')
class BehindBController {
  @Get('scoped')
  @RequireScopes('billing:read')
  scoped(@Auth() auth: Admission) {
    return describeAuth(auth)
  }
}

/**
 * The guard routes on one platform, with or without the global guard. Gate B is the platform's
 * own tollgate adapter ahead of Nest: Express middleware on `/behind-b`; on Fastify a plugin of the
 * root context (Nest's routes are there), which lets every other path through with `skip`.
 */
function nestGuardApp(platform: 'express' | 'fastify', globalGuard: boolean): GuardAppFactory {
  return (a, b) => {
    const tollgate = TollgateModule.forRoot(a, { globalGuard })
    @Module({
      imports: [tollgate],
      controllers: [SoloController, GatedController, BehindBController],
    })
    class GuardModule {}
    let started: Promise<unknown>
    if (platform === 'express') {
      const instance = express()
      instance.use('/behind-b', expressAdapter.tollgate(b))
      started = NestFactory.create(GuardModule, new ExpressAdapter(instance), {
        logger: false,
      }).then((app) => app.useGlobalFilters(new AppFilter()).init())
      return createServer(waitingFor(() => started, instance))
    }
    const adapter = new FastifyAdapter({
      serverFactory: (handler: (req: IncomingMessage, res: ServerResponse) => void) =>
        createServer(waitingFor(() => started, handler)),
    })
    const skip = b.skip
    const gateB = fastifyAdapter.tollgate({
      ...b,
      skip: (request) => !request.url?.startsWith('/behind-b/') || (skip?.(request) ?? false),
    })
    adapter.getInstance().register(gateB)
    started = NestFactory.create(GuardModule, adapter, { logger: false })
      .then((app) => app.useGlobalFilters(new AppFilter()).init())
      .then(() => adapter.getInstance().ready())
    return adapter.getHttpServer() as Server
  }
}

/** tollgate/nestjs serving `GUARD_PATHS`, without and with the global guard, on both platforms. */
export const NEST_GUARD_APPS: ReadonlyArray<readonly [string, GuardAppFactory]> = [
  ['nestjs (express)', nestGuardApp('express', false)],
  ['nestjs (fastify)', nestGuardApp('fastify', false)],
  ['nestjs (express, global guard)', nestGuardApp('express', true)],
  ['nestjs (fastify, global guard)', nestGuardApp('fastify', true)],
]
