/**
 * Fastify plugin (Fastify 4 and 5): `app.register(tollgate(options))`, then `request.auth`.
 *
 * @module
 */
import type {
  FastifyInstance,
  FastifyPluginCallback,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  RouteShorthandOptionsWithHandler,
} from 'fastify'
import fastifyPlugin from 'fastify-plugin'

import { renderError } from '../../src/errors.js'
import { type Gate, openGate, Refused } from '../../src/gate/gate.js'
import { Decisions, type GuardMiddlewareFactories, guardMiddleware } from '../../src/gate/guards.js'
import type { GateOptions } from '../../src/gate/options.js'
import { type CallbackEndpoints, callbackEndpoints } from '../../src/revocation/callbacks.js'
import { type Handle, type SignalEndpoint, signalEndpoint } from '../../src/signals/endpoint.js'
import type { Admission, CheckResult } from '../../src/types.js'
import { RUN_GATE } from './mcp.js'
import { admitOn, keepHeaders, requestOf, send } from './translate.js'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Set by tollgate once the token is verified, the tenant resolved and its limit respected;
     * `undefined` when credentials are optional and none were sent, or `skip` matched.
     */
    auth: Admission | undefined
  }
}

/** A hook in callback style: a `preHandler` for a route's `preHandler` option. */
export type TollgateHook = (
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
) => void

/** The plugin, with the gate behind it and route guards that answer exactly as it does. */
export interface TollgatePlugin
  extends FastifyPluginCallback,
    GuardMiddlewareFactories<TollgateHook>,
    CallbackEndpoints<RouteShorthandOptionsWithHandler>,
    SignalEndpoint<RouteShorthandOptionsWithHandler> {
  /** The gate: `ready()`, `refresh()`, `close()`, `revoke()`, `unrevoke()` for operations. */
  readonly gate: Gate
  /** For `mcpGate`: a hook that runs the gate when it has not decided on the request, and no more. */
  readonly [RUN_GATE]: TollgateHook
}

const FORM = 'application/x-www-form-urlencoded'
// Marks the provider callback routes in their route config: the provider sends no bearer token,
// and Fastify runs a context's hooks for every route in it, whatever the order of declaration.
const CALLBACK_ROUTE = Symbol('tollgate.callbackRoute')

function isCallbackRoute(request: FastifyRequest): boolean {
  const config = request.routeOptions.config as unknown as Record<symbol, unknown> | undefined
  return config?.[CALLBACK_ROUTE] === true
}

function hasForm(request: FastifyRequest): boolean {
  const type = request.headers['content-type']
  return type?.split(';', 1)[0]?.trim().toLowerCase() === FORM
}

/**
 * A Fastify plugin that admits a request (setting `request.auth` and rate-limit headers) or
 * refuses it, in an `onRequest` hook; a form-encoded request is decided in `preValidation`, once
 * the application's parser has read the body, so that a token sent in it as well as in the
 * header is refused (RFC 6750 §2.2). Wrapped with fastify-plugin: the hook applies to the context
 * the plugin is registered in and its children, not to sibling contexts. Refusals are answered
 * with JSON `{ error, error_description }` through `reply`, or handed to Fastify's error handler
 * with `errorHandling: 'framework'` (the error carries `statusCode` and `headers`). Its guards
 * (`requireScopes(…)` and the others, `preHandler`s) run the gate first when it has not decided on
 * the request, so a guard protects a route on its own, in any context; the gate decides once per
 * request.
 *
 * @example
 * ```ts
 * const auth = tollgate({ issuers: keycloak({ authUrl, realms: ['acme'] }), audience: 'gateway' })
 * await app.register(auth)
 * app.get('/invoices', { preHandler: auth.requireScopes('billing:read') }, async (request) => ({
 *   subject: request.auth?.subject,
 * }))
 * ```
 * @throws TypeError at creation when `options` are invalid.
 */
export function tollgate(options: GateOptions): TollgatePlugin {
  const { gate, decide } = openGate(options)
  const decisions = new Decisions<FastifyRequest>()
  const refuse = (error: unknown, reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    if (gate.errorHandling === 'framework') {
      // Set on the reply first: an error handler that sets only the status and a body
      // (`reply.code(err.statusCode).send(…)`) keeps the challenge, Retry-After and RateLimit.
      keepHeaders(reply, error)
      return void done(error as Error)
    }
    // An answer from a hook: Fastify skips the rest of the chain; `done` is not called.
    send(reply, renderError(error))
  }
  /** What follows an admission: the next hook (the gate's), or a guard's check. */
  type Then = (
    request: FastifyRequest,
    reply: FastifyReply,
    result: CheckResult,
    done: HookHandlerDoneFunction,
  ) => void
  const proceed: Then = (_request, _reply, _result, done) => done()
  const admit = (
    request: FastifyRequest,
    reply: FastifyReply,
    result: CheckResult,
    done: HookHandlerDoneFunction,
    then: Then,
  ): void => {
    decisions.remember(request, result)
    admitOn(request, reply, result)
    then(request, reply, result, done)
  }

  function decideOn(
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
    then: Then,
    scope?: string,
  ) {
    const view = requestOf(request, scope)
    const metadata = gate.resourceMetadata(view)
    if (metadata !== undefined) return send(reply, metadata)
    const decided = decide(view)
    if (decided instanceof Refused) return refuse(decided.error, reply, done)
    if (!(decided instanceof Promise)) return admit(request, reply, decided, done, then)
    // Two-argument then: a throw in a later hook can never come back here as a refusal.
    decided.then(
      (result) => admit(request, reply, result, done, then),
      (error: unknown) => refuse(error, reply, done),
    )
  }

  function tollgateOnRequest(
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
  ): void {
    if (hasForm(request) || isCallbackRoute(request)) return void done()
    // Decided already: the plugin is registered in this context and in a parent.
    if (decisions.of(request) !== undefined) return void done()
    decideOn(request, reply, done, proceed)
  }
  function tollgatePreValidation(
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
  ): void {
    if (!hasForm(request) || isCallbackRoute(request)) return void done()
    if (decisions.of(request) !== undefined) return void done()
    decideOn(request, reply, done, proceed)
  }

  // The gate only, on a route guarded on its own (`mcpGate`, which then reads the body).
  function tollgateRunGate(
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
  ): void {
    if (decisions.of(request) !== undefined) return void done()
    decideOn(request, reply, done, proceed)
  }

  function plugin(instance: FastifyInstance, _options: unknown, done: (error?: Error) => void) {
    // One decorator per app, whatever the number of gates registered in its contexts.
    if (!instance.hasRequestDecorator('auth')) instance.decorateRequest('auth', undefined)
    instance.addHook('onRequest', tollgateOnRequest)
    instance.addHook('preValidation', tollgatePreValidation)
    done()
  }

  const guards = guardMiddleware((guard): TollgateHook => {
    const check: Then = (request, reply, result, done) => {
      try {
        gate.authorize(guard, result.auth, requestOf(request, guard.scope))
      } catch (error) {
        return refuse(error, reply, done)
      }
      done()
    }
    return function tollgateGuard(request, reply, done) {
      const result = decisions.of(request)
      // The gate has not decided on this request (a route guarded on its own, or outside the
      // plugin's context): it decides first, the body parsed by now; its refusals name the
      // guard's scopes.
      if (result === undefined) return decideOn(request, reply, done, check, guard.scope)
      check(request, reply, result, done)
    }
  })
  const callback = (handle: Handle): RouteShorthandOptionsWithHandler => ({
    config: { [CALLBACK_ROUTE]: true },
    handler: async function tollgateCallback(request, reply) {
      const { headers, method, body, raw } = request
      const answer = await handle({ headers, method, body, stream: raw })
      return reply
        .code(answer.status)
        .headers(answer.headers)
        .send(answer.body === '' ? undefined : answer.body)
    },
  })
  const endpoints = { ...callbackEndpoints(gate, callback), ...signalEndpoint(callback) }
  const wrapped = fastifyPlugin(plugin, { name: 'tollgate' })
  return Object.assign(wrapped, guards, endpoints, { gate, [RUN_GATE]: tollgateRunGate })
}

// The helpers that build `issuers`, imported beside `tollgate()` in the guides. The rest of the
// core (createGate, types, errors) is `tollgate`'s: test/adapters/exports.test.ts holds the list.
export { auth0, cognito, entra, okta } from '../../src/providers/index.js'
export { keycloak } from '../../src/token/issuers.js'
export { mcpGate } from './mcp.js'
export type { SignInHook, SignInPlugin } from './signin.js'
export { signIn } from './signin.js'
