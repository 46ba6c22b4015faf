/**
 * The platform's Shared Signals (OpenID SSF 1.0, CAEP, RISC): how the gateway and the office
 * product hear that a user signed out at the sign-in provider's page, or that an administrator
 * disabled the account, and refuse that user's access tokens from then on.
 *
 * Each product is a receiver of its own, as in a real deployment: the provider keeps one stream
 * per receiver (SSF 1.0 §8.1.1), each with the receiver's audience, the events it asked for and
 * its delivery, and each product applies what arrives to its own gate's revocation.
 *
 * - The gateway faces the internet: the provider pushes SETs to its endpoint (RFC 8935), which
 *   answers once the SET is applied.
 * - The office is an internal backend the provider cannot call: it polls the provider (RFC 8936)
 *   with long polls, so a SET comes back the moment it is queued, and acknowledges what it
 *   applied in its next poll.
 *
 * The office does not share the gateway's revocation list. A revocation store shared through
 * Redis is how the instances of one product agree (each product's fleet gives its gate's
 * `revocation` and its receiver or poller `store: { redis }`, and one instance of the fleet
 * polls); between two products it would make the office's refusals depend on the gateway's
 * receiver and couple two teams' stores, while the office's tokens (audience `office`) reach it
 * without passing through the gateway (its own web front). Here each fleet is one process with
 * its list in memory.
 *
 * @module
 */
import type { Gate, SignalEvent, SignalPoller, SignalReceiver } from 'tollgate'
import { createSignalPoller, createSignalReceiver } from 'tollgate'
import { createTestTransmitter, type TestTransmitter } from 'tollgate/testing'

/**
 * The gateway's stream: SETs pushed to `path`, with the `Authorization` header its transmitter
 * sends (a demo secret, not a real one).
 */
export const GATEWAY_SIGNALS = {
  path: '/ssf/events',
  audience: 'urn:platform:gateway',
  authorization: 'Bearer demo-only-signals-secret',
}

/**
 * The office's stream: SETs queued for its polls, which carry `authorization` (a demo secret,
 * not a real one).
 */
export const OFFICE_SIGNALS = {
  audience: 'urn:platform:office',
  authorization: 'Bearer demo-only-office-poll-secret',
}

/** The sign-in provider's two streams, one per receiving product. */
export interface ProviderStreams {
  /** Pushes to the gateway. */
  readonly gateway: TestTransmitter
  /** Queues for the office's polls. */
  readonly office: TestTransmitter
}

/** Starts the provider's streams; the gateway's pushes go to `gatewayUrl`. */
export async function startSignalStreams(gatewayUrl: string): Promise<ProviderStreams> {
  const gateway = await createTestTransmitter({
    audience: GATEWAY_SIGNALS.audience,
    delivery: {
      method: 'push',
      endpoint: `${gatewayUrl}${GATEWAY_SIGNALS.path}`,
      authorization: GATEWAY_SIGNALS.authorization,
    },
  })
  try {
    const office = await createTestTransmitter({
      audience: OFFICE_SIGNALS.audience,
      delivery: { method: 'poll' },
      pollAuthorization: OFFICE_SIGNALS.authorization,
    })
    return { gateway, office }
  } catch (error) {
    await gateway.close()
    throw error
  }
}

/** The gateway's receiver, for `auth.sharedSignals(receiver)` at {@link GATEWAY_SIGNALS}.path. */
export function gatewayReceiver(
  gate: Gate,
  stream: TestTransmitter,
  onEvent: (event: SignalEvent) => void,
): SignalReceiver {
  return createSignalReceiver({
    gate,
    transmitter: { issuer: stream.issuer },
    audience: GATEWAY_SIGNALS.audience,
    authorization: GATEWAY_SIGNALS.authorization,
    onEvent,
  })
}

/** The office's receiver and its poller, polling from now on. */
export function officeReceiver(
  gate: Gate,
  stream: TestTransmitter,
  onEvent: (event: SignalEvent) => void,
): { readonly receiver: SignalReceiver; readonly poller: SignalPoller } {
  const receiver = createSignalReceiver({
    gate,
    transmitter: { issuer: stream.issuer },
    audience: OFFICE_SIGNALS.audience,
    onEvent,
  })
  const poller = createSignalPoller({
    receiver,
    endpoint: stream.pollEndpoint,
    authorization: OFFICE_SIGNALS.authorization,
    onEvent,
  })
  poller.start()
  return { receiver, poller }
}
