/**
 * Koa + koa-jwt + jwks-rsa, configured as jwks-rsa's README shows for koa-jwt: key caching and
 * JWKS rate limiting on, RS256 only, issuer and audience checked.
 */
import jwksRsa from 'jwks-rsa'
import jwt from 'koa-jwt'
import { config, serve } from './common.ts'
import { koaServer } from './koa-app.ts'

const { jwksUri, issuer, audience } = config()
const auth = jwt({
  secret: jwksRsa.koaJwtSecret({ jwksUri, cache: true, rateLimit: true, jwksRequestsPerMinute: 5 }),
  algorithms: ['RS256'],
  issuer,
  audience,
})

await serve(() => koaServer(auth, (ctx) => (ctx.state.user as { sub?: string } | undefined)?.sub))
