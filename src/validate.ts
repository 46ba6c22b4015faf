/**
 * The one option-validation kit: every option of the gate, its tenants and its limits is checked
 * with these, once, at construction, and fails with the same wording: the option's full path, what
 * it must be, and what was received. A received value is shown only where the caller says it is
 * safe to show (an enum, an algorithm name, a URL without its credentials and query); any other
 * text is summarized by type and length, never repeated (an option set by mistake to a secret must
 * not end up in a crash log).
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
 * How a received value may appear in a message: `true` for text that is never secret (an enum, an
 * algorithm name, a host), `'url'` for a URL, shown without userinfo, query or fragment (where
 * passwords and API keys travel). Anything that is not a string is summarized either way.
 */
export type Show = true | 'url'

/** Longest text quoted in a message; the rest is cut and marked with `…`. */
const MAX_SHOWN = 120

/** `text` in single quotes, with control characters, quotes and backslashes escaped. */
function quote(text: string): string {
  const cut = text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}…` : text
  const escaped = cut.replace(/[\\'\p{Cc}\p{Cf}\u2028\u2029]/gu, (char) =>
    char === '\\' || char === "'"
      ? `\\${char}`
      : `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  )
  return `'${escaped}'`
}

/**
 * A URL as it may appear in a message: userinfo (`user:password@`) becomes `***@`, a query `?…`
 * and a fragment `#…`. Works on text that does not parse as a URL too, since that is exactly what
 * a message about a bad URL receives.
 */
export function redactUrl(text: string): string {
  // Userinfo: anything before the last `@` of the authority (RFC 3986 §3.2.1).
  return text
    .replace(/^([a-z][a-z0-9+.-]*:\/\/|\/\/)?([^/?#]*)@/i, (_match, scheme = '') => `${scheme}***@`)
    .replace(/\?[^#]*/, (query) => (query === '?' ? '?' : '?…'))
    .replace(/#.*$/s, (fragment) => (fragment === '#' ? '#' : '#…'))
}

/** A received value as a message shows it: see {@link Show}; without `show`, {@link summarize}. */
export function describeValue(value: unknown, show?: Show): string {
  if (show === undefined || typeof value !== 'string') return summarize(value)
  return quote(show === 'url' ? redactUrl(value) : value)
}

/**
 * Throws the kit's `TypeError`: `createGate(options): "<path>" <expectation> (got <value>)`.
 * Without `value` (a rule about the option, not about its type), the `(got …)` part is left out.
 * The value is summarized by type and length unless `how.show` says it is safe to show.
 */
export function fail(
  path: string,
  expectation: string,
  ...value: [] | [value: unknown] | [value: unknown, how: { readonly show: Show }]
): never {
  const got = value.length === 0 ? '' : ` (got ${describeValue(value[0], value[1]?.show)})`
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

/**
 * One of `allowed`; the first of them when absent. A refused string is shown: whatever was meant
 * as one of a fixed list of names is not a secret, and seeing `'alowed'` beats counting letters.
 */
export function oneOf<T extends string | boolean>(
  value: unknown,
  path: string,
  allowed: readonly T[],
): T {
  if (value === undefined) return allowed[0] as T
  if (!allowed.includes(value as T)) {
    const list = allowed.map((item) => (typeof item === 'string' ? `'${item}'` : String(item)))
    fail(path, `must be one of ${list.join(', ')}`, value, { show: true })
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

/**
 * A `'memory' | { redis: client }` store option: the client, or `undefined` for memory. Anything
 * else (another key beside `redis`, a client without `eval`) fails at `path`.
 */
export function redisStoreOption<T>(value: unknown, path: string): T | undefined {
  if (value === undefined || value === 'memory') return undefined
  const client = isRecord(value) ? value['redis'] : undefined
  if (
    !isRecord(value) ||
    Object.keys(value).some((key) => key !== 'redis') ||
    typeof client !== 'object' ||
    client === null
  ) {
    fail(path, "must be 'memory' or { redis: client }", value)
  }
  if (typeof (client as Record<string, unknown>)['eval'] !== 'function') {
    fail(`${path}.redis`, 'must be an ioredis Redis or Cluster client', client)
  }
  return client as T
}
