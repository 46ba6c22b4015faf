/**
 * Express + express-oauth2-jwt-bearer (Auth0's middleware, jose underneath), configured through
 * the issuer's discovery document as its README recommends.
 */
import { auth } from 'express-oauth2-jwt-bearer'
import { config, serve } from './common.ts'
import { expressServer } from './express-app.ts'

const { issuer, audience } = config()
const middleware = auth({ issuerBaseURL: issuer, audience, tokenSigningAlg: 'RS256' })

await serve(() =>
  expressServer(
    middleware,
    (req) => (req as { auth?: { payload: { sub?: string } } }).auth?.payload.sub,
  ),
)
