/**
 * `tollgate/otel`: OpenTelemetry metrics and spans for the gate, the token source and sign-in,
 * as event listeners. Re-exports only.
 *
 * @module
 */
export {
  createOtelListener,
  createSignInOtelListener,
  createTokenSourceOtelListener,
  type OtelOptions,
  type SignInOtelOptions,
  type TokenSourceOtelOptions,
} from './otel.js'
