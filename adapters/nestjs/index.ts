/**
 * NestJS adapter (NestJS 12, Express or Fastify platform): `TollgateModule.forRoot(options)`, a
 * guard, and decorators (`@RequireScopes(...)`, `@Public()`, `@Auth()`, `@McpGate()`, `@Mcp()`),
 * with no Passport strategy in between; the module also serves the RFC 9728 metadata document and
 * the provider callbacks of `revocation.callbacks`.
 *
 * @module
 */

import type { IncomingMessage, ServerResponse } from 'node:http'
import {
  type CanActivate,
  Catch,
  createParamDecorator,
  type DynamicModule,
  type ExceptionFilter,
  type ExecutionContext,
  HttpException,
  Inject,
  Injectable,
  Module,
  type NestModule,
  type OnApplicationShutdown,
  type Provider,
  UseGuards,
} from '@nestjs/common'
import { APP_FILTER, APP_GUARD, HttpAdapterHost } from '@nestjs/core'

import type { Request, Response } from 'express'
import type { FastifyReply, FastifyRequest } from 'fastify'

import type { ErrorResponse } from '../../src/errors.js'
import { emitOf, type Gate, openGate, Refused } from '../../src/gate/gate.js'
import {
  Decisions,
  type Guard,
  requireAnyScope,
  requireClientRoles,
  requireRealmRoles,
  requireScopes,
} from '../../src/gate/guards.js'
import type { GateOptions } from '../../src/gate/options.js'
import {
  type RecentSignInOptions,
  requireAcr,
  requireRecentSignIn,
} from '../../src/gate/step-up.js'
import { renderMcpError } from '../../src/mcp/answer.js'
import { createMcpPolicy, type McpAuthorized, type McpPolicyOptions } from '../../src/mcp/policy.js'
import type { Admission, CheckResult, RequestLike } from '../../src/types.js'
import { boolean, fail, isRecord, record, validateFor } from '../../src/validate.js'
import * as express from '../express/translate.js'
import * as fastify from '../fastify/translate.js'
import {
  createEndpoints,
  type Endpoints,
  registerFastifyCallbacks,
  serveEndpoints,
  type TollgateCallbackPaths,
  type TollgateSignalsEndpoint,
} from './endpoints.js'
import { type McpPlatform, McpStep } from './mcp.js'

export type { TollgateCallbackPaths, TollgateSignalsEndpoint } from './endpoints.js'

/** The injection token of the {@link Gate} that `TollgateModule.forRoot()` built. */
export const TOLLGATE_GATE = Symbol('tollgate.gate')
// What every guard instance of one module shares, kept out of the application's reach: the gate,
// its decide step, and the requests already decided.
const OPENED_GATE = Symbol('tollgate.openedGate')
// What the endpoints middleware serves, built with the gate.
const ENDPOINTS = Symbol('tollgate.endpoints')
interface OpenedGate extends ReturnType<typeof openGate> {
  /**
   * A request reaches the guard more than once when it is global and also on the route (named in
   * `@UseGuards()`, or put there by a `@Require…` decorator): the later times take the first
   * decision instead of spending a second rate-limit point. Guard instances differ (Nest builds
   * one per module that uses it); this record is the gate's.
   */
  readonly decisions: Decisions<object>
  /** The checks of `@McpGate()` routes, with the module's policy (`moduleOptions.mcp`). */
  readonly mcp: McpStep
}

/** The HTTP side of an execution context: the platform's request and response. */
type HttpArgumentsHost = ReturnType<ExecutionContext['switchToHttp']>

/** What the guard sets on the platform's request object, for handlers that read it directly. */
interface AuthHolder {
  auth?: Admission | undefined
  mcp?: McpAuthorized | undefined
}

/** How one HTTP platform is read and answered: the only place the two platforms differ. */
interface Platform extends McpPlatform {
  /** The request as the gate reads it; `requiredScope`: the route's scopes, for challenges. */
  requestOf(request: unknown, requiredScope?: string): RequestLike
  /** Sets `request.auth` and the admission's headers. */
  admit(request: unknown, response: unknown, result: CheckResult): void
  send(response: unknown, answer: ErrorResponse): void
  /** Sets a refusal's headers on the response before it is thrown (`errorHandling: 'framework'`). */
  keepHeaders(response: unknown, error: unknown): void
}

// The translations of tollgate/express and tollgate/fastify themselves, so that the answers are
// byte for byte theirs.
const EXPRESS: Platform = {
  requestOf: (request, requiredScope) => express.requestOf(request as Request, requiredScope),
  admit: (request, response, result) =>
    express.admitOn(request as Request, response as Response, result),
  send: (response, answer) => express.send(response as Response, answer),
  keepHeaders: (response, error) => express.keepHeaders(response as Response, error),
  streamOf: (request) => request as Request,
  headerOf: (response, name) => textOf((response as Response).getHeader(name)),
  setHeaders: (response, headers) => {
    for (const name in headers) (response as Response).setHeader(name, headers[name] as string)
  },
  // Express's response is Node's.
  handOver: () => {},
}

const FASTIFY: Platform = {
  requestOf: (request, requiredScope) =>
    fastify.requestOf(request as FastifyRequest, requiredScope),
  admit: (request, response, result) =>
    fastify.admitOn(request as FastifyRequest, response as FastifyReply, result),
  send: (response, answer) => fastify.send(response as FastifyReply, answer),
  keepHeaders: (response, error) => fastify.keepHeaders(response as FastifyReply, error),
  streamOf: (request) => (request as FastifyRequest).raw,
  headerOf: (response, name) => textOf((response as FastifyReply).getHeader(name)),
  setHeaders: (response, headers) => void (response as FastifyReply).headers(headers),
  handOver: (response) => fastify.handOver(response as FastifyReply),
}

function textOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined
}

/**
 * The application's HTTP platform; `undefined` in a standalone application context
 * (`NestFactory.createApplicationContext`, scripts reusing the app's modules), which serves no
 * request. Any other platform fails at start-up, when the guard and the filter are built.
 */
function platformOf(host: HttpAdapterHost): Platform | undefined {
  // Typed as always there, but null (or undefined) without an HTTP server.
  if (host.httpAdapter == null) return undefined
  const type: unknown = host.httpAdapter.getType()
  if (type === 'express') return EXPRESS
  if (type === 'fastify') return FASTIFY
  throw new TypeError(
    `tollgate/nestjs: the HTTP platform ${JSON.stringify(type)} is not supported; use @nestjs/platform-express or @nestjs/platform-fastify`,
  )
}

function servingPlatform(platform: Platform | undefined): Platform {
  if (platform === undefined) throw new TypeError('tollgate/nestjs: no HTTP platform')
  return platform
}

/**
 * A refusal on its way from the guard to {@link TollgateExceptionFilter}: an `HttpException`
 * with the core's status and body, and the rendered answer that the filter sends as it is
 * (headers included, which an `HttpException` alone cannot carry to the client).
 */
export class TollgateRefusal extends HttpException {
  /**
   * Status, headers and body, as `renderError()` made them; an MCP request refused as such (an
   * `McpRequestError`, `@McpGate()` routes), as `renderMcpError()` makes it: a JSON-RPC error.
   */
  readonly answer: ErrorResponse
  constructor(error: unknown) {
    const answer = renderMcpError(error)
    super(JSON.parse(answer.body) as Record<string, unknown>, answer.status, { cause: error })
    this.answer = answer
  }
}

// The guards that decorators attached to a controller class or a handler, in reading order.
const routeGuards = new WeakMap<object, readonly Guard[]>()
const publicRoutes = new WeakSet<object>()

/** The `@Require…` decorators of a route: the controller's, then the handler's; `undefined` when none. */
function routeGuardsOf(controller: object, handler: object): readonly Guard[] | undefined {
  const onController = routeGuards.get(controller)
  const onHandler = routeGuards.get(handler)
  if (onController === undefined) return onHandler
  return onHandler === undefined ? onController : [...onController, ...onHandler]
}

/** The scopes of a route's first scope guard: what its refusals name, as a guard alone's do. */
function scopeOf(guards: readonly Guard[] | undefined): string | undefined {
  if (guards === undefined) return undefined
  for (const guard of guards) if (guard.scope !== undefined) return guard.scope
  return undefined
}

/** Whether the admission meets a guard: checked before a refusal's view is built. */
function meets(guard: Guard, auth: Admission | undefined): boolean {
  try {
    guard(auth)
    return true
  } catch {
    return false
  }
}

/** The class (class decorator) or the handler function (method decorator) decorated. */
function decorated(target: object, descriptor: PropertyDescriptor | undefined): object {
  return (descriptor?.value as object | undefined) ?? target
}

// The classes and handlers a `@Require…` or `@McpGate()` decorator put the guard on, once each.
const selfGuarded = new WeakSet<object>()

/**
 * Puts the guard on what a decorator decorates, so that it protects its route on its own: without
 * the global guard, a `@Require…` route would otherwise check nothing and stay open. With it, the
 * request is still decided once.
 */
function guardItself(target: object, key?: string | symbol, descriptor?: PropertyDescriptor) {
  const holder = decorated(target, descriptor)
  if (selfGuarded.has(holder)) return
  selfGuarded.add(holder)
  if (descriptor === undefined) UseGuards(TollgateGuard)(target as NewableFunction)
  else UseGuards(TollgateGuard)(target, key as string | symbol, descriptor)
}

function guardDecorator(guard: Guard): MethodDecorator & ClassDecorator {
  return (target: object, key?: string | symbol, descriptor?: PropertyDescriptor) => {
    const holder = decorated(target, descriptor)
    // Decorators run from the bottom up: prepending keeps the order in which they are read.
    routeGuards.set(holder, [guard, ...(routeGuards.get(holder) ?? [])])
    guardItself(target, key, descriptor)
  }
}

// The classes and handlers marked `@McpGate()`.
const mcpRoutes = new WeakSet<object>()

/**
 * Route decorator (handler or controller) for an MCP endpoint: once the gate admitted the request
 * and the route's `@Require…` decorators passed, the guard reads the JSON-RPC body (as the
 * platform's parser left it; read from the stream, at most `maxBodyBytes`, and set on the request
 * when no parser read it), refuses a request whose `Mcp-Method` / `Mcp-Name` headers disagree
 * with the body (400, JSON-RPC error -32020), answers 403 `insufficient_scope` naming exactly the
 * scopes of the tool, resource or prompt called, and counts the call in the tool's own windows, by
 * the module's policy (`moduleOptions.mcp`). `@Mcp()` then gives the operation authorized. Like
 * the `@Require…` decorators it puts {@link TollgateGuard} on its route, so the route is guarded
 * without the global guard too; checked and counted once per request.
 *
 * @example
 * ```ts
 * @Controller('mcp')
 * @McpGate()
 * export class McpController {
 *   @All()
 *   async handle(@Req() req: Request, @Res() res: Response) {
 *     await transport.handleRequest(req, res, req.body)
 *   }
 * }
 * ```
 */
export function McpGate(): MethodDecorator & ClassDecorator {
  return (target: object, key?: string | symbol, descriptor?: PropertyDescriptor) => {
    mcpRoutes.add(decorated(target, descriptor))
    guardItself(target, key, descriptor)
  }
}

/**
 * Parameter decorator: the MCP operation the guard authorized on an `@McpGate()` route
 * (`{ method, name, operations }`); `undefined` elsewhere.
 */
export const Mcp: () => ParameterDecorator = createParamDecorator(
  (_data: unknown, context: ExecutionContext) =>
    context.switchToHttp().getRequest<AuthHolder>().mcp,
)

/**
 * Route decorator (handler or controller): 403 `insufficient_scope` unless the token has every
 * one of `scopes`. Each `@Require…` decorator puts {@link TollgateGuard} on what it decorates, so
 * it protects its route without the global guard too (the gate decides once per request).
 *
 * @throws TypeError at start-up when a scope is empty or holds spaces, quotes or backslashes.
 */
export function RequireScopes(...scopes: string[]): MethodDecorator & ClassDecorator {
  return guardDecorator(requireScopes(...scopes))
}

/** Route decorator: 403 `insufficient_scope` unless the token has at least one of `scopes`. */
export function RequireAnyScope(...scopes: string[]): MethodDecorator & ClassDecorator {
  return guardDecorator(requireAnyScope(...scopes))
}

/** Route decorator: 403 unless Keycloak's `realm_access.roles` has every one of `roles`. */
export function RequireRealmRoles(...roles: string[]): MethodDecorator & ClassDecorator {
  return guardDecorator(requireRealmRoles(...roles))
}

/** Route decorator: 403 unless `resource_access[clientId].roles` has every one of `roles`. */
export function RequireClientRoles(
  clientId: string,
  ...roles: string[]
): MethodDecorator & ClassDecorator {
  return guardDecorator(requireClientRoles(clientId, ...roles))
}

/**
 * Route decorator: 401 `insufficient_user_authentication` with `acr_values="…"` (RFC 9470) unless
 * the token's `acr` is one of `values`.
 */
export function RequireAcr(...values: string[]): MethodDecorator & ClassDecorator {
  return guardDecorator(requireAcr(...values))
}

/**
 * Route decorator: 401 `insufficient_user_authentication` with `max_age=…` (RFC 9470) unless the
 * token's `auth_time` is at most `maxAgeSeconds` ago (and not later than now or its `iat` by more
 * than `options.clockToleranceSeconds`, default 5).
 */
export function RequireRecentSignIn(
  maxAgeSeconds: number,
  options?: RecentSignInOptions,
): MethodDecorator & ClassDecorator {
  return guardDecorator(requireRecentSignIn(maxAgeSeconds, options))
}

/**
 * Route decorator (handler or controller): the guard lets the request through untouched: no
 * token is read, `@Auth()` gives `undefined`, no rate-limit point is spent.
 */
export function Public(): MethodDecorator & ClassDecorator {
  return (target: object, _key?: string | symbol, descriptor?: PropertyDescriptor) => {
    publicRoutes.add(decorated(target, descriptor))
  }
}

/**
 * Parameter decorator: the request's {@link Admission} (`undefined` on a `@Public()` route, or
 * when credentials are optional and none were sent).
 *
 * @example
 * ```ts
 * @Get('invoices') list(@Auth() auth: Admission) { return { subject: auth.subject } }
 * ```
 */
export const Auth: () => ParameterDecorator = createParamDecorator(
  (_data: unknown, context: ExecutionContext) =>
    context.switchToHttp().getRequest<AuthHolder>().auth,
)

/**
 * The guard: decides on every HTTP request with the gate (setting `request.auth` and the
 * rate-limit headers), then runs the route's `@Require…` decorators, which put this guard on their
 * route themselves. However many times it runs on a request (global, and on the route), the gate
 * decides once. Refusals are thrown as
 * {@link TollgateRefusal}, which {@link TollgateExceptionFilter} answers with JSON
 * `{ error, error_description }`; with `errorHandling: 'framework'` the typed `TollgateError`
 * itself is thrown, for the application's own exception filters. Requests that are not HTTP
 * (microservices, websockets) are refused unless the handler is `@Public()`.
 */
export class TollgateGuard implements CanActivate {
  readonly #gate: Gate
  readonly #decide: OpenedGate['decide']
  readonly #decisions: OpenedGate['decisions']
  readonly #mcp: McpStep
  readonly #platform: Platform | undefined
  constructor(opened: OpenedGate, host: HttpAdapterHost) {
    this.#gate = opened.gate
    this.#decide = opened.decide
    this.#decisions = opened.decisions
    this.#mcp = opened.mcp
    this.#platform = platformOf(host)
  }

  // Not async: a decision that needed no I/O is answered with a boolean, which Nest takes
  // without awaiting.
  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const handler = context.getHandler()
    const controller = context.getClass()
    if (publicRoutes.has(handler) || publicRoutes.has(controller)) return true
    if (context.getType() !== 'http') return false
    const platform = servingPlatform(this.#platform)
    const http = context.switchToHttp()
    const request = http.getRequest<object>()
    const guards = routeGuardsOf(controller, handler)
    const mcp = mcpRoutes.has(handler) || mcpRoutes.has(controller)
    // Decided by an earlier run on this request (the global guard, then the route's): the route's
    // decorators again, which pass as before, and no second decision (nor MCP count).
    const result = this.#decisions.of(request)
    if (result !== undefined) {
      if (guards !== undefined) this.#authorize(guards, result, platform, http)
      return !mcp || this.#mcpChecks(request, result, platform, http)
    }
    // The route's scopes go into the decision: a refusal names them (RFC 6750 §3), as the other
    // adapters' guards do when they run the gate.
    const view = platform.requestOf(request, scopeOf(guards))
    const decided = this.#decide(view)
    if (decided instanceof Refused) throw this.#refusal(decided.error, platform, http)
    const admit = (admitted: CheckResult): boolean | Promise<boolean> => {
      this.#decisions.remember(request, admitted)
      platform.admit(request, http.getResponse<unknown>(), admitted)
      if (guards !== undefined) this.#authorize(guards, admitted, platform, http, view)
      return !mcp || this.#mcpChecks(request, admitted, platform, http)
    }
    if (!(decided instanceof Promise)) return admit(decided)
    return decided.then(admit, (error: unknown) => {
      throw this.#refusal(error, platform, http)
    })
  }

  /**
   * Runs the route's `@Require…` decorators; throws the first refusal, whose challenge names that
   * guard's scopes. `view`: the request as the decision read it, reused when its scopes fit.
   */
  #authorize(
    guards: readonly Guard[],
    result: CheckResult,
    platform: Platform,
    http: HttpArgumentsHost,
    view?: RequestLike,
  ): true {
    for (const guard of guards) {
      // Met: nothing to build. Refused: the gate runs it again on a view naming its scopes.
      if (meets(guard, result.auth)) continue
      const scoped =
        view !== undefined && view.requiredScope === guard.scope
          ? view
          : platform.requestOf(http.getRequest<object>(), guard.scope)
      try {
        this.#gate.authorize(guard, result.auth, scoped)
      } catch (error) {
        throw this.#refusal(error, platform, http)
      }
    }
    return true
  }

  /** The checks of an `@McpGate()` route, after the route's decorators: once per request. */
  #mcpChecks(
    request: object,
    result: CheckResult,
    platform: Platform,
    http: HttpArgumentsHost,
  ): true | Promise<true> {
    return this.#mcp.run(request, http.getResponse<unknown>(), result.auth, platform, (error) =>
      this.#refusal(error, platform, http),
    )
  }

  /**
   * What the guard throws: a {@link TollgateRefusal} for the module's filter, or with
   * `errorHandling: 'framework'` the typed error itself, its headers (`WWW-Authenticate`,
   * `Retry-After`, the RateLimit fields) set on the response first, so that an exception filter
   * that sets only the status and a body still answers with them.
   */
  #refusal(error: unknown, platform: Platform, http: HttpArgumentsHost): unknown {
    if (this.#gate.errorHandling !== 'framework') return new TollgateRefusal(error)
    platform.keepHeaders(http.getResponse<unknown>(), error)
    return error
  }
}
// No decorator syntax in the package (no compiler flag needed to build it): Nest's decorators
// applied as the functions they are, with explicit tokens instead of design-time metadata.
Inject(OPENED_GATE)(TollgateGuard, undefined, 0)
Inject(HttpAdapterHost)(TollgateGuard, undefined, 1)
Injectable()(TollgateGuard)

/** Sends a {@link TollgateRefusal}'s answer: status, headers and body as `renderError()` made them. */
export class TollgateExceptionFilter implements ExceptionFilter<TollgateRefusal> {
  readonly #platform: Platform | undefined
  constructor(host: HttpAdapterHost) {
    this.#platform = platformOf(host)
  }
  catch(refusal: TollgateRefusal, host: Parameters<ExceptionFilter['catch']>[1]): void {
    servingPlatform(this.#platform).send(host.switchToHttp().getResponse<unknown>(), refusal.answer)
  }
}
Inject(HttpAdapterHost)(TollgateExceptionFilter, undefined, 0)
Catch(TollgateRefusal)(TollgateExceptionFilter)
Injectable()(TollgateExceptionFilter)

/** How `TollgateModule.forRoot()` installs the guard and where it serves the provider callbacks. */
export interface TollgateModuleOptions {
  /**
   * `true` (default): the guard protects every route of the application (`APP_GUARD`), and
   * `@Public()` opens a route. `false`: only where `@UseGuards(TollgateGuard)` puts it.
   */
  readonly globalGuard?: boolean
  /**
   * The paths of the provider callbacks (back-channel logout, Keycloak's push not-before), served
   * for POST ahead of the guard, at these paths whatever the global prefix. Needs
   * `revocation.callbacks` in the gate's options. Default: none served.
   */
  readonly callbacks?: TollgateCallbackPaths
  /**
   * The Shared Signals push endpoint (RFC 8935), served for POST ahead of the guard at `path`:
   * `receiver` builds the receiver from the module's gate (`(gate) => createSignalReceiver({ gate,
   * … })`). Default: not served.
   */
  readonly sharedSignals?: TollgateSignalsEndpoint
  /**
   * The policy of the routes marked `@McpGate()` (as `mcpGate`'s of the other adapters): scopes
   * per tool, resource and prompt, a `default` for every other operation, windows per (tenant,
   * tool), `maxBodyBytes`. Default: no scope beyond the gate's admission, the headers checked
   * against the body.
   */
  readonly mcp?: McpPolicyOptions
}

/**
 * The module: builds the gate once, validates `options` at start-up, and provides the gate
 * ({@link TOLLGATE_GATE}), {@link TollgateGuard} and the filter that answers its refusals; serves
 * the RFC 9728 metadata document (`resourceMetadata` option) and the provider callbacks
 * (`moduleOptions.callbacks`) ahead of the guard. Global: import it once, in the root module.
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [TollgateModule.forRoot({ issuers: keycloak({ authUrl, realms: ['acme'] }), audience: 'gateway' })],
 *   controllers: [InvoicesController],
 * })
 * export class AppModule {}
 * ```
 */
export class TollgateModule implements NestModule, OnApplicationShutdown {
  readonly #endpoints: Endpoints
  readonly #host: HttpAdapterHost
  readonly #gate: Gate
  constructor(endpoints: Endpoints, host: HttpAdapterHost, gate: Gate) {
    this.#endpoints = endpoints
    this.#host = host
    this.#gate = gate
  }

  /**
   * `app.close()` (or a signal, with `app.enableShutdownHooks()`) closes the gate the module built:
   * key fetches under way are aborted and the revocation subscriber's connection is closed, so that
   * nothing of tollgate's keeps the process alive.
   */
  async onApplicationShutdown(): Promise<void> {
    await this.#gate.close()
  }

  /**
   * @throws TypeError when `options` or `moduleOptions` are invalid (the message names the option).
   */
  static forRoot(options: GateOptions, moduleOptions: TollgateModuleOptions = {}): DynamicModule {
    const given = validateFor('TollgateModule.forRoot(options, moduleOptions):', () => {
      const checked = record(moduleOptions, 'moduleOptions', [
        'globalGuard',
        'callbacks',
        'sharedSignals',
        'mcp',
      ])
      const mcp = checked['mcp']
      if (mcp !== undefined && !isRecord(mcp)) {
        fail('moduleOptions.mcp', 'must be an object (the policy of mcpGate)', mcp)
      }
      return {
        globalGuard: boolean(checked['globalGuard'], 'moduleOptions.globalGuard', true),
        callbacks: checked['callbacks'],
        sharedSignals: checked['sharedSignals'],
        mcp: mcp as McpPolicyOptions | undefined,
      }
    })
    // Its refusals reach the application as the `cause` of a TollgateRefusal: reasons are read.
    const { gate, decide } = openGate(options, { refusalsReachApplication: true })
    const opened: OpenedGate = {
      gate,
      decide,
      decisions: new Decisions(),
      mcp: new McpStep(gate, mcpPolicy(gate, given.mcp)),
    }
    const endpoints = validateFor('TollgateModule.forRoot(options, moduleOptions):', () =>
      createEndpoints(opened.gate, given.callbacks, given.sharedSignals),
    )
    const providers: Provider[] = [
      { provide: OPENED_GATE, useValue: opened },
      { provide: TOLLGATE_GATE, useValue: opened.gate },
      { provide: ENDPOINTS, useValue: endpoints },
      TollgateGuard,
      { provide: APP_FILTER, useClass: TollgateExceptionFilter },
    ]
    if (given.globalGuard) providers.push({ provide: APP_GUARD, useExisting: TollgateGuard })
    return {
      module: TollgateModule,
      global: true,
      providers,
      exports: [OPENED_GATE, TOLLGATE_GATE, TollgateGuard],
    }
  }

  /**
   * Mounts what is served without a token, when there is something to serve: a middleware for
   * the metadata document (and, on Express, the callbacks), and on Fastify the callback routes.
   * Called by Nest while it registers middleware: after its body parsers, before its routes.
   */
  configure(): void {
    const { httpAdapter } = this.#host
    const platform = platformOf(this.#host)
    if (platform === FASTIFY) registerFastifyCallbacks(httpAdapter.getInstance(), this.#endpoints)
    const callbacks = platform === EXPRESS
    const endpoints = this.#endpoints
    if (!endpoints.serves(callbacks)) return
    // On the platform itself, as `app.use()` in a bootstrap does, not with Nest's consumer: Nest
    // puts its middleware under the global prefix, and the well-known path is at the root.
    httpAdapter.use(function tollgateEndpoints(
      req: IncomingMessage,
      res: ServerResponse,
      next: (error?: unknown) => void,
    ) {
      serveEndpoints(endpoints, callbacks, req, res, next)
    })
  }
}

/**
 * The module's MCP policy, its tool windows reporting through the gate's listener.
 *
 * @throws TypeError naming `moduleOptions.mcp.…` when the policy is invalid.
 */
function mcpPolicy(gate: Gate, options: McpPolicyOptions | undefined) {
  try {
    return createMcpPolicy(options ?? {}, { onEvent: emitOf(gate) })
  } catch (error) {
    if (!(error instanceof TypeError)) throw error
    const message = error.message.replace(/^mcp policy: /, 'moduleOptions.mcp.')
    throw new TypeError(`TollgateModule.forRoot(options, moduleOptions): ${message}`, {
      cause: error,
    })
  }
}

Inject(ENDPOINTS)(TollgateModule, undefined, 0)
Inject(HttpAdapterHost)(TollgateModule, undefined, 1)
Inject(TOLLGATE_GATE)(TollgateModule, undefined, 2)
Module({})(TollgateModule)

// What Nest makes a user spell out for this entry's own decorators and token, which carry no type
// (`@Auth() auth: Admission`, `@Mcp() mcp: McpAuthorized`, `@Inject(TOLLGATE_GATE) gate: Gate`),
// and the helpers that build `issuers`. The rest of the core (types, errors) is `tollgate`'s:
// test/adapters/exports.test.ts holds the list.
export type { Gate } from '../../src/gate/gate.js'
export type { McpAuthorized } from '../../src/mcp/policy.js'
export { auth0, cognito, entra, okta } from '../../src/providers/index.js'
export { keycloak } from '../../src/token/issuers.js'
export type { Admission } from '../../src/types.js'
