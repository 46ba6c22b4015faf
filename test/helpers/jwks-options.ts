/**
 * Key-set settings for tests that build an `IssuerKeys` without a gate: the gate's defaults but a
 * one-second fetch deadline, so a test of a fault never waits long.
 */
import type { NormalizedJWKSOptions } from '../../src/token/jwks.js'

export const TEST_JWKS_OPTIONS: NormalizedJWKSOptions = {
  timeoutMs: 1000,
  cooldownMs: 30_000,
  minCooldownMs: 500,
  maxAgeMs: 600_000,
  staleIfErrorMs: 3_600_000,
  maxBodyBytes: 262_144,
  allowInsecureHttp: false,
  fetch: (...args) => globalThis.fetch(...args),
}
