/**
 * A gate over a provider profile's issuer entries, its keys served by the test issuer: the
 * profile's own `jwksUri` (a provider host this machine cannot reach) is fetched from the test
 * issuer's real JWKS endpoint instead, and any other URL fails, so a profile that builds the wrong
 * key URL fails its tests. Tokens are minted with the provider's `iss` and claims (./shapes.ts).
 * `keysAt` is the test issuer's key set to serve: its default realm's unless told.
 */
import type { AnyTollgateError } from '../../src/errors.js'
import {
  type Admission,
  createGate,
  type GateEvent,
  type GateOptions,
  type IssuerOptions,
} from '../../src/index.js'
import type { TestIssuer } from '../../src/testing/index.js'

export interface ProviderGate {
  /** The admission, or the refusal's reason and operator detail. */
  check(token: string): Promise<
    | { readonly auth: Admission; readonly reason?: undefined }
    | {
        readonly auth?: undefined
        readonly reason: string
        readonly status: number
        readonly detail: Readonly<Record<string, unknown>> | undefined
      }
  >
  /** Key URLs the gate fetched, in order. */
  readonly fetched: readonly string[]
  close(): Promise<void>
}

export function providerGate(
  kit: TestIssuer,
  issuers: readonly IssuerOptions[],
  options: Omit<GateOptions, 'issuers' | 'jwks' | 'onEvent'> = {},
  keysAt: string = kit.jwksUri(),
): ProviderGate {
  const fetched: string[] = []
  const served = new Set(issuers.map((entry) => entry.jwksUri))
  const events: GateEvent[] = []
  const gate = createGate({
    ...options,
    issuers,
    onEvent: (event) => events.push(event),
    jwks: {
      fetch: (input, init) => {
        const url = String(input)
        fetched.push(url)
        if (!served.has(url)) return Promise.reject(new Error(`unexpected key URL ${url}`))
        return globalThis.fetch(keysAt, init)
      },
    },
  })
  return {
    fetched,
    async check(token) {
      events.length = 0
      try {
        const { auth } = await gate.check({ headers: { authorization: `Bearer ${token}` } })
        return { auth: auth as Admission }
      } catch (caught) {
        const error = caught as AnyTollgateError
        const rejected = events.find((event) => event.type === 'rejected')
        return {
          reason: error.reason,
          status: error.status,
          detail: rejected?.type === 'rejected' ? rejected.detail : undefined,
        }
      }
    },
    close: () => gate.close(),
  }
}
