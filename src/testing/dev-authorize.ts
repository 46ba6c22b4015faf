/**
 * `authorize()` of the development provider: an authorization request followed as a browser
 * would, with the user chosen by `login_hint`, for tests that sign in without a page.
 *
 * @module
 */

/**
 * Follows `authorizationUrl` (which must be `issuer`'s) with `login_hint=user`, keeping the
 * provider's cookies in `cookies` (a fresh jar by default; give one to reuse the provider session
 * later, for its end-session page), until a redirect leaves the provider's origin; returns that URL.
 */
export async function followAuthorization(
  issuer: string,
  authorizationUrl: string,
  user: string,
  cookies: Map<string, string> = new Map(),
): Promise<URL> {
  const target = new URL(authorizationUrl)
  if (!target.href.startsWith(`${issuer}/`)) {
    throw new TypeError(`authorize(): the URL is not this provider's (${issuer})`)
  }
  target.searchParams.set('login_hint', user)
  const providerOrigin = target.origin
  let next = target.href
  for (let hop = 0; hop < 10; hop++) {
    const response = await fetch(next, {
      redirect: 'manual',
      headers: { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; ') },
    })
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';', 1)
      const equals = pair.indexOf('=')
      cookies.set(pair.slice(0, equals), pair.slice(equals + 1))
    }
    await response.body?.cancel()
    const location = response.headers.get('location')
    if (location === null) throw new Error(`authorize(): ${response.status} without a redirect`)
    const resolved = new URL(location, next)
    if (resolved.origin !== providerOrigin) return resolved
    next = resolved.href
  }
  throw new Error('authorize(): more than 10 redirects')
}
