/**
 * The shapes sign-in's routes share: the request and response the adapters translate, and what
 * the back-channel logout route needs from the core. Kept apart from `signin.ts` so that the
 * routes import it and not each other.
 *
 * @module
 */
import type { HeadersLike } from '../types.js'
import type { SignInEvent } from './events.js'
import type { normalizeSignInOptions } from './options.js'

/** A request, as the adapters pass it. */
export interface SignInRequest {
  readonly method: string
  /** Path and query as received (Express `req.originalUrl`, Koa `ctx.originalUrl`). */
  readonly url: string
  readonly headers: HeadersLike
  /** The parsed body, when a body parser ran before sign-in (back-channel logout). */
  readonly body?: unknown
  /** The request body stream, read for back-channel logout when no parser ran. */
  readonly stream?: AsyncIterable<Uint8Array | string>
}

/** A complete response for the adapter to send. */
export interface SignInResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string | readonly string[]>>
  readonly body: string
}

/** Ends sessions of a user or of a provider session; back-channel logout's part of the core. */
export interface SessionEnder {
  endSessions(
    issuer: string,
    by: { sid?: string | undefined; sub?: string | undefined },
  ): Promise<number>
}

/** Internal: what the back-channel logout route needs from the core. */
export interface SignInInternals {
  readonly sessions: SessionEnder
  readonly settings: ReturnType<typeof normalizeSignInOptions>
  readonly emit: ((event: SignInEvent) => void) | undefined
}
