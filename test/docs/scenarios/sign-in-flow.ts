/**
 * A browser's sign-in through a sample that mounts `signIn()`: the login route, the development
 * provider's authorization endpoint (`provider.authorize()`, as the user picking their name on
 * its page), the callback, and the session cookie. The sample's `baseUrl` is
 * `https://office.example.com`: the provider sends the browser back there, and this sends that
 * callback to the sample on loopback.
 */
import type { DevProvider } from 'tollgate/testing'
import { expect } from 'vitest'

import type { SampleProgram } from '../scenario.js'

/** `name=value` of each Set-Cookie line, by name (an empty value: cleared). */
export function cookiesOf(response: Response): Map<string, string> {
  const cookies = new Map<string, string>()
  for (const line of response.headers.getSetCookie()) {
    const [pair = ''] = line.split(';', 1)
    const equals = pair.indexOf('=')
    cookies.set(pair.slice(0, equals), pair.slice(equals + 1))
  }
  return cookies
}

export function cookieHeader(cookies: ReadonlyMap<string, string>): string {
  return [...cookies]
    .filter(([, value]) => value !== '')
    .map(([name, value]) => `${name}=${value}`)
    .join('; ')
}

export interface SignedIn {
  /** The `Cookie` header of the session. */
  readonly cookie: string
  /** Where the callback sent the browser. */
  readonly location: string
}

/**
 * Signs `user` in through `program`'s routes (default paths) and returns the session cookie.
 * Checks what docs/signin.md promises on the way: the login route redirects to the provider's
 * authorization endpoint with PKCE S256 and a `__Host-` transaction cookie, and the callback
 * redirects to `returnTo` with the session cookie.
 */
export async function signInAs(
  program: SampleProgram,
  provider: DevProvider,
  user: string,
  returnTo = '/records',
): Promise<SignedIn> {
  const login = await program.fetch(`/auth/login?returnTo=${encodeURIComponent(returnTo)}`, {
    redirect: 'manual',
  })
  expect(login.status, program.output()).toBe(302)
  const authorization = login.headers.get('location') ?? ''
  expect(authorization.startsWith(provider.authorizationEndpoint), authorization).toBe(true)
  expect(new URL(authorization).searchParams.get('code_challenge_method')).toBe('S256')
  const transaction = cookiesOf(login)
  expect([...transaction.keys()].some((name) => name.startsWith('__Host-'))).toBe(true)

  const back = await provider.authorize(authorization, { user })
  expect(back.origin).toBe('https://office.example.com')
  expect(back.pathname).toBe('/auth/callback')
  const callback = await program.fetch(`${back.pathname}${back.search}`, {
    redirect: 'manual',
    headers: { cookie: cookieHeader(transaction) },
  })
  expect(callback.status, program.output()).toBe(302)
  const session = cookiesOf(callback)
  expect(session.get('__Host-tollgate.sid')).toMatch(/./)
  return {
    cookie: `__Host-tollgate.sid=${session.get('__Host-tollgate.sid')}`,
    location: callback.headers.get('location') ?? '',
  }
}
