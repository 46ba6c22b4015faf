/**
 * Request parameters of a token source: scope, resource indicators and audience. Together with the
 * issuer, the client and the grant they key the cache and single-flight, so they are normalized
 * (scopes deduplicated and sorted) and validated here, once per source and once per `get()` that
 * passes its own.
 *
 * @module
 */
import { fail, record, validateFor } from '../validate.js'

/** Request parameters: the key of the cache and of single-flight, with the issuer and client. */
export interface TokenParameters {
  /** Scopes to request: request the minimum each call needs (spec, handling rules). */
  readonly scope?: string | readonly string[]
  /** RFC 8707 resource indicators: the product the token is for (`https://office.example.com`). */
  readonly resource?: string | readonly string[]
  /** An `audience` parameter, for providers that take one instead of `resource`. */
  readonly audience?: string
}

/** Request parameters, normalized: scopes deduplicated and sorted, so equal requests share a key. */
export interface NormalizedParameters {
  readonly scope: string | undefined
  readonly resource: readonly string[]
  readonly audience: string | undefined
}

// RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/
const PARAMETER_KEYS = ['scope', 'resource', 'audience']

/**
 * Validates the parameters of one `get()` call against the source's defaults.
 *
 * @throws TypeError `get(parameters): …`.
 */
export function normalizeParameters(
  input: unknown,
  defaults: NormalizedParameters,
): NormalizedParameters {
  return validateFor('get(parameters):', () => {
    const value = record(input, 'parameters', PARAMETER_KEYS) as TokenParameters
    return {
      scope: value.scope === undefined ? defaults.scope : scopeOption(value.scope, 'scope'),
      resource:
        value.resource === undefined
          ? defaults.resource
          : resourceOption(value.resource, 'resource'),
      audience:
        value.audience === undefined
          ? defaults.audience
          : audienceOption(value.audience, 'audience'),
    }
  })
}

/** The source's default parameters, from its options (`createTokenSource(options):` messages). */
export function parametersOption(value: TokenParameters): NormalizedParameters {
  return Object.freeze({
    scope: value.scope === undefined ? undefined : scopeOption(value.scope, 'scope'),
    resource: value.resource === undefined ? [] : resourceOption(value.resource, 'resource'),
    audience: value.audience === undefined ? undefined : audienceOption(value.audience, 'audience'),
  })
}

/** One parameter's validation (also `exchange()`'s). */
export function scopeOption(value: unknown, path: string): string | undefined {
  const list = typeof value === 'string' ? value.split(' ').filter(Boolean) : value
  if (
    !Array.isArray(list) ||
    !list.every((item) => typeof item === 'string' && SCOPE_TOKEN.test(item))
  ) {
    fail(
      path,
      'must be a space-separated string or an array of scope tokens (RFC 6749 §3.3)',
      value,
    )
  }
  const sorted = [...new Set(list as string[])].sort()
  return sorted.length === 0 ? undefined : sorted.join(' ')
}

/** One parameter's validation (also `exchange()`'s). */
export function resourceOption(value: unknown, path: string): readonly string[] {
  const list = typeof value === 'string' ? [value] : value
  if (!Array.isArray(list))
    fail(path, 'must be an absolute URI or an array of them (RFC 8707)', value)
  for (const item of list as unknown[]) {
    let ok = false
    if (typeof item === 'string') {
      try {
        ok = new URL(item).hash === ''
      } catch {}
    }
    if (!ok) fail(path, 'must hold absolute URIs without a fragment (RFC 8707 §2)', item)
  }
  return Object.freeze([...new Set(list as string[])].sort())
}

/** One parameter's validation (also `exchange()`'s). */
export function audienceOption(value: unknown, path: string): string {
  if (typeof value !== 'string' || value === '' || value.length > 1024) {
    fail(path, 'must be a non-empty string', value)
  }
  return value
}
