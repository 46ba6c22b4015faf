/** What the limiter tests hand to `consume()`: a verified token of realm acme, and a GET request. */
import type { VerifiedToken } from '../../src/limits/tenant.js'
import type { RequestLike } from '../../src/types.js'

const ISSUER = 'https://sso.example.com/realms/acme'

export const token: VerifiedToken = {
  header: { alg: 'RS256' },
  claims: { iss: ISSUER, exp: 2_000_000_000 },
  issuer: ISSUER,
  realm: 'acme',
}

export const get: RequestLike = { headers: {}, method: 'GET', url: '/items' }
