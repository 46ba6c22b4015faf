/**
 * Secrets kept out of code (spec, handling rules for clients): a client secret, a private key or
 * a refresh token is given as a value, as an environment variable reference (`fromEnv('NAME')`,
 * the one place tollgate reads `process.env`), or as a function (a secrets manager). Each is
 * resolved when a token request needs it, and described to operators by where it comes from,
 * never by what it is.
 *
 * @module
 */
import { inspect } from 'node:util'

import { TokenSourceError } from './errors.js'

const ENV_REFERENCE = Symbol('tollgate.envReference')
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,254}$/

/** A reference to an environment variable, made by {@link fromEnv}. Holds the name, never the value. */
export interface EnvReference {
  readonly [ENV_REFERENCE]: true
  /** The variable's name. */
  readonly name: string
}

/** A secret of type `T`: the value itself, {@link fromEnv}, or a function (sync or async) returning it. */
export type SecretInput<T = string> = T | EnvReference | (() => T | Promise<T>)

/**
 * A reference to the environment variable `name`, read when a token request first needs it (not
 * at import or construction), so a process can start before its secrets are mounted.
 * Reading fails with `ERR_SECRET_UNAVAILABLE` (not retryable) when the variable is unset or empty.
 *
 * @example
 * ```ts
 * createTokenSource({ issuer, clientId: 'billing-sync', clientSecret: fromEnv('BILLING_SYNC_SECRET') })
 * ```
 * @throws TypeError when `name` is not a valid variable name.
 */
export function fromEnv(name: string): EnvReference {
  if (typeof name !== 'string' || !ENV_NAME.test(name)) {
    throw new TypeError(
      'fromEnv(name): "name" must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)',
    )
  }
  const reference = {
    [ENV_REFERENCE]: true as const,
    name,
    toString: () => `fromEnv('${name}')`,
    toJSON: () => `fromEnv('${name}')`,
    [inspect.custom]: () => `fromEnv('${name}')`,
  }
  return Object.freeze(reference)
}

/** `true` for what {@link fromEnv} returns. */
export function isEnvReference(value: unknown): value is EnvReference {
  return typeof value === 'object' && value !== null && ENV_REFERENCE in value
}

/** How a secret is described in errors and events: where it comes from, never its value. */
export function describeSecret(input: unknown, option: string): string {
  if (isEnvReference(input)) return `fromEnv('${input.name}')`
  if (typeof input === 'function') return `the function given as "${option}"`
  return `the "${option}" option`
}

/** Who asks for a secret, to name them in the error. */
export interface SecretContext {
  readonly clientId: string
  readonly issuer: string
  /** The option, for the description (`clientSecret`, `privateKey`, `refreshToken`). */
  readonly option: string
}

/**
 * Resolves a secret for one token request.
 *
 * @throws TokenSourceError `ERR_SECRET_UNAVAILABLE`: an unset or empty variable (not retryable), or a
 * function that threw or returned nothing usable (retryable: secrets managers have outages too).
 */
export async function resolveSecret<T>(
  input: SecretInput<T>,
  context: SecretContext,
  usable: (value: unknown) => value is T,
): Promise<T> {
  const from = describeSecret(input, context.option)
  const unavailable = (detail: string, retryable: boolean, cause?: unknown) =>
    new TokenSourceError({
      code: 'ERR_SECRET_UNAVAILABLE',
      message: `${context.option} of client "${context.clientId}" is unavailable: ${from} ${detail}`,
      retryable,
      clientId: context.clientId,
      issuer: context.issuer,
      secretSource: from,
      cause,
    })
  if (isEnvReference(input)) {
    // The one place tollgate reads the environment: documented, and only when asked to.
    const value = process.env[input.name]
    if (value === undefined) throw unavailable('is not set', false)
    if (value === '') throw unavailable('is empty', false)
    if (!usable(value)) throw unavailable('does not hold a usable value', false)
    return value
  }
  if (typeof input === 'function') {
    let value: unknown
    try {
      value = await (input as () => T | Promise<T>)()
    } catch (error) {
      // The function's error is not kept: it may quote what it was reading.
      throw unavailable(`threw (${error instanceof Error ? error.name : typeof error})`, true)
    }
    if (value === '' || !usable(value)) throw unavailable('returned no usable value', true)
    return value
  }
  return input
}
