/**
 * Hono + hono's own `jwk` middleware (`hono/jwk`), RS256 only, issuer and audience checked
 * through `verification`. Given `jwks_uri`, the middleware fetches the key set on every request
 * (hono 4.13: no cache), which would measure the issuer as much as the middleware; so the key set
 * is fetched once, at startup, and handed over as `keys`, the middleware's other documented
 * option: the cheapest way to run it.
 */
import { jwk } from 'hono/jwk'
import type { HonoJsonWebKey } from 'hono/utils/jwt/jws'
import { config, serve } from './common.ts'
import { honoServer } from './hono-app.ts'

const { jwksUri, issuer, audience } = config()

await serve(async () => {
  const response = await fetch(jwksUri)
  if (!response.ok) throw new Error(`JWKS fetch failed: ${response.status}`)
  const { keys } = (await response.json()) as { keys: HonoJsonWebKey[] }
  return honoServer(
    jwk({ keys, alg: ['RS256'], verification: { iss: issuer, aud: audience } }),
    (c) => (c.get('jwtPayload') as { sub?: string } | undefined)?.sub,
  )
})
