/**
 * The settings and the status of a key set, shared by its parts (`jwks-*.ts`).
 *
 * @module
 */
import type { JWKSFailureReason } from '../events.js'

/** Validated JWKS settings (see `GateOptions.jwks` for meanings and defaults). */
export interface NormalizedJWKSOptions {
  readonly timeoutMs: number
  readonly cooldownMs: number
  readonly minCooldownMs: number
  readonly maxAgeMs: number
  readonly staleIfErrorMs: number
  readonly maxBodyBytes: number
  readonly allowInsecureHttp: boolean
  readonly fetch: typeof globalThis.fetch
}

/** How an issuer's keys stand, as `gate.ready()` reports it. */
export interface IssuerKeysStatus {
  readonly issuer: string
  /** `fresh`: usable and within max age; `stale`: serving last good keys after failed refreshes; `unavailable`: no usable keys. */
  readonly state: 'fresh' | 'stale' | 'unavailable'
  readonly keys: number
  /** When the keys in use were fetched (ms since epoch), if ever. */
  readonly fetchedAt: number | undefined
  readonly lastFailure: JWKSFailureReason | undefined
  /** The HTTP status of the last failed fetch, when the provider answered one (`404`…). */
  readonly lastFailureStatus: number | undefined
  /** The URL the last failed fetch went to (JWKS or discovery document), query shown as `?…`. */
  readonly lastFailureUrl: string | undefined
}

/** The issuer a key set is for, as the gate's options name it. */
export interface KeySetIssuer {
  readonly issuer: string
  readonly jwksUri: string | undefined
  readonly discovery: boolean
}
