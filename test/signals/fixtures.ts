/**
 * The pieces every signals test uses: a token issuer (the gate's tokens), a test SSF
 * transmitter, a gate with revocation, and a receiver over them, with the helpers to push a SET
 * and to ask the gate what it decides.
 */
import type { TollgateError } from '../../src/errors.js'
import { createGate, type Gate } from '../../src/gate/gate.js'
import type { GateOptions } from '../../src/gate/options.js'
import type { SignalEvent } from '../../src/signals/events.js'
import type { SignalReceiverOptions } from '../../src/signals/options.js'
import { createSignalReceiver, type SignalReceiver } from '../../src/signals/receiver.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import {
  createTestTransmitter,
  type TestTransmitter,
  type TestTransmitterOptions,
} from '../../src/testing/ssf-transmitter.js'
import { keycloak } from '../../src/token/issuers.js'

export const AUDIENCE = 'https://gateway.example'
export const PUSH_AUTHORIZATION = 'Bearer push-secret-Tq8vL2-never-shown'

export interface SignalsWorld {
  readonly issuer: TestIssuer
  /** The `iss` of the gate's tokens (realm acme). */
  readonly tokenIssuer: string
  readonly transmitter: TestTransmitter
  close(): Promise<void>
}

export async function startWorld(
  options: Partial<TestTransmitterOptions> = {},
): Promise<SignalsWorld> {
  const issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  const transmitter = await createTestTransmitter({ audience: AUDIENCE, ...options })
  return {
    issuer,
    tokenIssuer: `${issuer.url}/realms/acme`,
    transmitter,
    async close() {
      await transmitter.close()
      await issuer.close()
    },
  }
}

export interface Receiving {
  readonly gate: Gate
  readonly receiver: SignalReceiver
  readonly events: SignalEvent[]
  close(): Promise<void>
}

export function receiving(
  world: SignalsWorld,
  extra: Partial<SignalReceiverOptions> = {},
  gateExtra: Partial<GateOptions> = {},
): Receiving {
  const gate = createGate({
    issuers: keycloak({ authUrl: world.issuer.url, realms: ['acme'] }),
    audience: 'gateway',
    revocation: {},
    ...gateExtra,
  })
  const events: SignalEvent[] = []
  const receiver = createSignalReceiver({
    gate,
    transmitter: { issuer: world.transmitter.issuer },
    audience: AUDIENCE,
    authorization: PUSH_AUTHORIZATION,
    onEvent: (event) => events.push(event),
    ...extra,
  })
  return {
    gate,
    receiver,
    events,
    async close() {
      receiver.close()
      await gate.close()
    },
  }
}

/** The push request a transmitter sends (RFC 8935 §2). */
export const pushRequest = (token: string, headers: Record<string, string> = {}) => ({
  method: 'POST',
  headers: {
    'content-type': 'application/secevent+jwt',
    authorization: PUSH_AUTHORIZATION,
    ...headers,
  },
  body: token,
})

export const nowSeconds = () => Math.floor(Date.now() / 1000)

/** `'admitted'` or the refusal's reason. */
export function decided(gate: Gate, token: string): Promise<string> {
  return gate.check({ headers: { authorization: `Bearer ${token}` } }).then(
    () => 'admitted',
    (error: TollgateError) => error.reason ?? error.code,
  )
}

export const refusals = (events: readonly SignalEvent[]) =>
  events.flatMap((event) => (event.type === 'signal_refused' ? [event.reason] : []))
