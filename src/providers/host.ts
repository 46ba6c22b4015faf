/**
 * The host name checks the provider profiles share.
 *
 * @module
 */
import { describeValue } from '../validate.js'

// A DNS name of labels: what a provider's domain (or a custom domain) can be.
const HOST =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/

/**
 * The host of a provider's domain, given bare (`acme.eu.auth0.com`) or as the https address the
 * provider's console shows (`https://acme.eu.auth0.com/`). Profiles build https URLs from it.
 *
 * @throws TypeError naming the profile and the option.
 */
export function providerHost(value: unknown, where: string): string {
  let host = value
  if (typeof value === 'string' && /^https:\/\//i.test(value)) {
    let url: URL | undefined
    try {
      url = new URL(value)
    } catch {
      url = undefined
    }
    // Only a bare origin: a path would be silently dropped, and the issuer built without it.
    host =
      url !== undefined &&
      (url.pathname === '/' || url.pathname === '') &&
      !url.search &&
      !url.hash &&
      !url.username &&
      !url.port
        ? url.hostname
        : undefined
  }
  if (typeof host !== 'string' || !HOST.test(host)) {
    throw new TypeError(
      `${where} must be the provider's host name, e.g. "acme.eu.auth0.com" (got ${describeValue(value, 'url')})`,
    )
  }
  return host.toLowerCase()
}

/** A non-empty list of non-empty strings (one string counts as a list of one). */
export function nonEmptyStrings(value: unknown, where: string, what: string): string[] {
  const list = typeof value === 'string' ? [value] : value
  if (
    !Array.isArray(list) ||
    list.length === 0 ||
    list.some((item) => typeof item !== 'string' || item === '')
  ) {
    throw new TypeError(`${where} must be ${what} (got ${describeValue(value)})`)
  }
  return [...new Set(list as string[])]
}

/** Throws unless `options` is an object without unknown keys. */
export function profileOptions(
  options: unknown,
  profile: string,
  known: readonly string[],
): Record<string, unknown> {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(`${profile}(options): "options" must be an object with ${known.join(', ')}`)
  }
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      throw new TypeError(
        `${profile}(options): unknown option ${JSON.stringify(key.slice(0, 64))}; the options are ${known.join(', ')}`,
      )
    }
  }
  return options as Record<string, unknown>
}
