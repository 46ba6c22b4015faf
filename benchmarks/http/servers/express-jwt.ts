/**
 * Express + express-jwt + jwks-rsa, configured as jwks-rsa's README shows for express-jwt: key
 * caching and JWKS rate limiting on, RS256 only, issuer and audience checked.
 */
import { expressjwt } from 'express-jwt'
import jwksRsa from 'jwks-rsa'
import { config, serve } from './common.ts'
import { expressServer } from './express-app.ts'

const { jwksUri, issuer, audience } = config()
const auth = expressjwt({
  secret: jwksRsa.expressJwtSecret({
    jwksUri,
    cache: true,
    rateLimit: true,
    jwksRequestsPerMinute: 5,
  }) as never,
  algorithms: ['RS256'],
  issuer,
  audience,
})

await serve(() => expressServer(auth, (req) => (req as { auth?: { sub?: string } }).auth?.sub))
