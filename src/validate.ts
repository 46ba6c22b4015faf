/**
 * The one option-validation kit: every option of the gate, its tenants and its limits is checked
 * with these, once, at construction, and fails with the same wording: the option's full path, what
 * it must be, and a summary of what was received that never repeats its text (an option set by
 * mistake to a secret must not end up in a crash log).
 *
 * @module
 */

/** Type and shape of a received value, never its content. */
export function summarize(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return `an array of length ${value.length}`
  if (value instanceof RegExp) return 'a RegExp'
  if (typeof value === 'object') return 'an object'
  if (typeof value === 'string') return `a string of length ${value.length}`
  if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${value}`
  return typeof value
}

/**
 * Throws the kit's `TypeError`: `createGate(options): "<path>" <expectation> (got <summary>)`.
 * Without `value` (a rule about the option, not about its type), the summary is left out.
 */
export function fail(path: string, expectation: string, ...value: [unknown?]): never {
  const got = value.length === 0 ? '' : ` (got ${summarize(value[0])})`
  throw new TypeError(`createGate(options): "${path}" ${expectation}${got}`)
}

/**
 * A prefix for Redis keys: 1 to 64 printable ASCII characters, no spaces, no braces (a brace
 * would move the Redis Cluster hash tag `{…}` that keeps related keys in one slot), or `fallback`.
 */
export function redisKeyPrefix(value: unknown, path: string, fallback: string): string {
  if (value === undefined) return fallback
  if (typeof value !== 'string' || !/^[\x21-\x7A\x7C\x7E]{1,64}$/.test(value)) {
    fail(path, 'must be 1 to 64 printable ASCII characters without spaces or braces', value)
  }
  return value
}

/** `true` for a plain options object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Checks that `value` is an object with only `known` keys; `path` names it (`''` for the root). */
export function record(
  value: unknown,
  path: string,
  known: ReadonlySet<string> | readonly string[],
): Record<string, unknown> {
  if (!isRecord(value)) fail(path, 'must be an object', value)
  const allowed = known instanceof Set ? known : new Set(known)
  for (const key of Object.keys(value)) {
    if (!allowed.has(key)) {
      const at = path === 'options' ? key : `${path}.${key}`
      fail(at, `is not an option; use one of: ${[...allowed].join(', ')}`)
    }
  }
  return value
}

/** A whole number in `[min, max]`, or `fallback` when absent (required when no fallback). */
export function integer(
  value: unknown,
  path: string,
  range: { readonly min: number; readonly max: number; readonly fallback?: number },
): number {
  if (value === undefined && range.fallback !== undefined) return range.fallback
  if (
    typeof value !== 'number' ||
    !Number.isInteger(value) ||
    value < range.min ||
    value > range.max
  ) {
    fail(path, `must be a whole number from ${range.min} to ${range.max}`, value)
  }
  return value
}

/** One of `allowed`; the first of them when absent. */
export function oneOf<T extends string | boolean>(
  value: unknown,
  path: string,
  allowed: readonly T[],
): T {
  if (value === undefined) return allowed[0] as T
  if (!allowed.includes(value as T)) {
    const list = allowed.map((item) => (typeof item === 'string' ? `'${item}'` : String(item)))
    fail(path, `must be one of ${list.join(', ')}`, value)
  }
  return value as T
}

/** A boolean, or `fallback` when absent. */
export function boolean(value: unknown, path: string, fallback: boolean): boolean {
  if (value === undefined) return fallback
  if (typeof value !== 'boolean') fail(path, 'must be a boolean', value)
  return value
}

/** A function, or `undefined` when absent; `signature` says what it is called with. */
export function optionalFunction<T>(
  value: unknown,
  path: string,
  signature: string,
): T | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'function') fail(path, `must be a function ${signature}`, value)
  return value as T
}

const GATE_PREFIX = 'createGate(options):'

/**
 * Runs `validate` with this kit for another factory: the kit's messages start with `prefix`
 * (`createTokenSource(options):`) instead of `createGate(options):`, and are otherwise the same.
 */
export function validateFor<T>(prefix: string, validate: () => T): T {
  try {
    return validate()
  } catch (error) {
    if (error instanceof TypeError && error.message.startsWith(GATE_PREFIX)) {
      throw new TypeError(`${prefix}${error.message.slice(GATE_PREFIX.length)}`)
    }
    throw error
  }
}
