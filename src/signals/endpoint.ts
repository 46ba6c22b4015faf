/**
 * The push endpoint as an adapter exposes it: `auth.sharedSignals(receiver)` returns that
 * framework's route handler, built with the same wrapper as the back-channel logout endpoint, so
 * that it reads the body (parsed or not) and answers exactly as the core says on every adapter.
 *
 * @module
 */
import type { CallbackRequest } from '../revocation/callback-body.js'
import type { CallbackResponse } from '../revocation/callbacks.js'
import type { SignalReceiver } from './receiver.js'

/** The Shared Signals push endpoint of an adapter. */
export interface SignalEndpoint<Middleware> {
  /**
   * Route middleware answering RFC 8935 pushes of `receiver`'s transmitter: mount it with POST,
   * before the gate (the transmitter sends no bearer token), at the URL given to the transmitter
   * as the stream's `endpoint_url`. Works with or without a body parser before it.
   *
   * @throws TypeError when `receiver` is not one (`createSignalReceiver(…)`).
   */
  sharedSignals(receiver: SignalReceiver): Middleware
}

/** A framework-neutral endpoint: the request an adapter hands over, the answer it sends. */
export type Handle = (request: CallbackRequest) => Promise<CallbackResponse>

/** Builds an adapter's push endpoint from its one way of turning a handler into middleware. */
export function signalEndpoint<Middleware>(
  wrap: (handle: Handle) => Middleware,
): SignalEndpoint<Middleware> {
  return {
    sharedSignals(receiver) {
      if (typeof (receiver as Partial<SignalReceiver> | undefined)?.push !== 'function') {
        throw new TypeError('sharedSignals(receiver): "receiver" must be createSignalReceiver(…)')
      }
      return wrap((request) => receiver.push(request))
    },
  }
}
