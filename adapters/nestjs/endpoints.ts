/**
 * What tollgate/nestjs answers without a token, ahead of Nest's guards: the RFC 9728 metadata
 * document and the provider callbacks of `revocation.callbacks`. The other adapters serve them
 * from a middleware mounted before the gate. Here `TollgateModule` mounts a middleware on the
 * platform for every path (as `app.use()` would), which serves the document, and the callbacks
 * on the Express platform, where it runs after Nest's body parsers. On the Fastify platform a
 * middleware runs before Fastify reads the body, so the callbacks are Fastify routes instead:
 * either way they get the body as the platform's parsers give it to any route.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

import type { ErrorResponse } from '../../src/errors.js'
import type { Gate } from '../../src/gate/gate.js'
import type { CallbackRequest, CallbackResponse } from '../../src/revocation/callbacks.js'
import { callbackEndpoints } from '../../src/revocation/callbacks.js'
import { signalEndpoint } from '../../src/signals/endpoint.js'
import type { SignalReceiver } from '../../src/signals/receiver.js'
import type { RequestLike } from '../../src/types.js'
import { fail, record } from '../../src/validate.js'
import { send } from '../express/translate.js'

/** Where `TollgateModule` serves the provider callbacks (`revocation.callbacks`). */
export interface TollgateCallbackPaths {
  /**
   * The path of the OpenID Connect Back-Channel Logout endpoint (the client's *Backchannel logout
   * URL*), for example `'/backchannel-logout'`. Default: not served.
   */
  readonly backchannelLogout?: string
  /**
   * The path of Keycloak's push not-before endpoint, `{client's Admin URL}/k_push_not_before`,
   * for example `'/keycloak/k_push_not_before'`. Default: not served.
   */
  readonly keycloakPushNotBefore?: string
}

type Handle = (request: CallbackRequest) => Promise<CallbackResponse>

/** Where `TollgateModule` serves the Shared Signals push endpoint, and the receiver behind it. */
export interface TollgateSignalsEndpoint {
  /** The path given to the transmitter as the stream's `endpoint_url`, for example `'/ssf/events'`. */
  readonly path: string
  /** Builds the receiver from the module's gate. */
  readonly receiver: (gate: Gate) => SignalReceiver
}

/** The answers the middleware gives, built once from the gate and the module's options. */
export interface Endpoints {
  resourceMetadata(request: RequestLike): ErrorResponse | undefined
  /** The callback handlers, by exact path; POST only. */
  readonly callbacks: ReadonlyMap<string, Handle>
  /**
   * Whether the middleware has anything to serve: the document, or the callbacks when it serves
   * them. The module applies no middleware at all otherwise.
   */
  serves(callbacks: boolean): boolean
}

const CALLBACK_NAMES = ['backchannelLogout', 'keycloakPushNotBefore'] as const

/** A path as the module option takes it: absolute, without query or fragment. */
function callbackPath(value: unknown, path: string): string {
  if (typeof value !== 'string' || !/^\/[^?#\s]*$/.test(value)) {
    fail(path, "must be a path starting with '/', without query or fragment", value, {
      show: true,
    })
  }
  return value
}

/**
 * Validates `moduleOptions.callbacks` against the gate (inside the module's `validateFor`) and
 * builds the endpoints.
 *
 * @throws TypeError when a path is not one, when both name the same path, or when the gate has no
 * `revocation.callbacks`.
 */
export function createEndpoints(gate: Gate, given: unknown, signals?: unknown): Endpoints {
  const callbacks = new Map<string, Handle>()
  if (given !== undefined) {
    const paths = record(given, 'moduleOptions.callbacks', CALLBACK_NAMES)
    if (!gate.acceptsCallbacks) {
      fail(
        'moduleOptions.callbacks',
        'needs the gate option "revocation.callbacks" ({ clientIds })',
      )
    }
    // The core's one way of making an endpoint: the same handlers the other adapters mount.
    const handlers = callbackEndpoints(gate, (handle) => handle)
    for (const name of CALLBACK_NAMES) {
      if (paths[name] === undefined) continue
      const at = callbackPath(paths[name], `moduleOptions.callbacks.${name}`)
      if (callbacks.has(at)) {
        fail(`moduleOptions.callbacks.${name}`, 'names the path of the other callback', at, {
          show: true,
        })
      }
      callbacks.set(at, handlers[name]())
    }
  }
  if (signals !== undefined) {
    const checked = record(signals, 'moduleOptions.sharedSignals', ['path', 'receiver'])
    const at = callbackPath(checked['path'], 'moduleOptions.sharedSignals.path')
    if (callbacks.has(at)) {
      fail('moduleOptions.sharedSignals.path', 'names the path of a callback', at, { show: true })
    }
    if (typeof checked['receiver'] !== 'function') {
      fail(
        'moduleOptions.sharedSignals.receiver',
        'must be a function (gate) => createSignalReceiver({ gate, … })',
      )
    }
    // The adapters' one way of making the endpoint, as for the callbacks.
    const receiver = (checked['receiver'] as (gate: Gate) => SignalReceiver)(gate)
    callbacks.set(at, signalEndpoint((handle) => handle).sharedSignals(receiver))
  }
  return {
    resourceMetadata: (request) => gate.resourceMetadata(request),
    callbacks,
    serves: (served) => gate.resourceMetadataUrl !== undefined || (served && callbacks.size > 0),
  }
}

/**
 * The request as the platform hands it to a middleware: Express's `req` on the Express platform
 * (body already parsed by Nest's parsers), Node's `IncomingMessage` on the Fastify platform (body
 * not read yet: Fastify parses it after the middleware, which is why the callbacks are routes
 * there).
 */
type MiddlewareRequest = IncomingMessage & { originalUrl?: string; body?: unknown }

function requestOf(req: MiddlewareRequest): RequestLike {
  const { headers, rawHeaders, method, body } = req
  // `originalUrl`: the path before a middleware mount point stripped it (Express, @fastify/middie).
  const url = req.originalUrl ?? req.url
  const secure = (req.socket as { encrypted?: boolean }).encrypted === true
  return { headers, rawHeaders, method, url, body, secure }
}

function pathOf(url: string | undefined): string {
  const query = url?.indexOf('?') ?? -1
  return query === -1 ? (url ?? '') : (url as string).slice(0, query)
}

/**
 * The middleware's one step: answers the request if it is one of the endpoints it serves (the
 * document; the callbacks as well when `callbacks` is `true`), else passes it on.
 */
export function serveEndpoints(
  endpoints: Endpoints,
  callbacks: boolean,
  req: MiddlewareRequest,
  res: ServerResponse,
  next: (error?: unknown) => void,
): void {
  const request = requestOf(req)
  const metadata = endpoints.resourceMetadata(request)
  if (metadata !== undefined) return void send(res, metadata)
  const handle =
    callbacks && req.method === 'POST' ? endpoints.callbacks.get(pathOf(request.url)) : undefined
  if (handle === undefined) return void next()
  const { headers, method, body } = req
  // Two-argument then: a throw in `send` is not passed to `next` as well.
  handle({ headers, method, body, stream: req }).then(
    (answer) => send(res, answer),
    (error: unknown) => next(error),
  )
}

/**
 * The callbacks as POST routes of the Fastify instance, outside Nest's router (no guard, no
 * interceptor: the provider sends no bearer token), as tollgate/fastify mounts them. In a context
 * of their own, where a body of a type no parser takes (`application/jwt`, or none) is left unread
 * for the core to read, instead of Fastify's 415, as Express leaves it. `platform` is the Fastify
 * instance (`httpAdapter.getInstance()` on the Fastify platform).
 */
export function registerFastifyCallbacks(platform: object, endpoints: Endpoints): void {
  if (endpoints.callbacks.size === 0) return
  // `object`, not Fastify's type, in the signature: the declarations of tollgate/nestjs must not
  // need `fastify`, which an application on the Express platform does not install.
  const instance = platform as FastifyInstance
  instance.register((context, _options, done) => {
    context.addContentTypeParser('*', (_request, _payload, parsed) => parsed(null))
    for (const [url, handle] of endpoints.callbacks) {
      context.post(
        url,
        async function tollgateCallback(request: FastifyRequest, reply: FastifyReply) {
          const { headers, method, body, raw } = request
          const answer = await handle({ headers, method, body, stream: raw })
          return reply
            .code(answer.status)
            .headers(answer.headers)
            .send(answer.body === '' ? undefined : answer.body)
        },
      )
    }
    done()
  })
}
