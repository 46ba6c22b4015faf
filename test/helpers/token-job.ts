/**
 * A batch job whose only work is one `get()`, run as its own process by the token-source tests:
 * its first request goes to a port nobody listens on (connection refused, a retryable failure),
 * the retry to the real provider. Prints the token's client id; exits when nothing is left to do.
 *
 * Usage: `node --import tsx token-job.ts <authUrl> <refusingUrl>`
 *
 * @module
 */
import { createTokenSource } from '../../src/client/index.js'
import { keycloak } from '../../src/index.js'
import { claimsOf, SECRET } from './client-fixtures.js'

const [authUrl, refusingUrl] = process.argv.slice(2) as [string, string]
let requests = 0
const source = createTokenSource({
  issuer: keycloak({ authUrl, realms: ['acme'] }),
  clientId: 'billing-sync',
  clientSecret: SECRET,
  retry: { attempts: 3, baseDelayMs: 200, maxDelayMs: 200 },
  fetch: (input, init) => (requests++ === 0 ? fetch(refusingUrl, init) : fetch(input, init)),
})
source.get().then(
  (token) => console.log(`token for ${String(claimsOf(token)['client_id'])}`),
  (error: { code?: string }) => console.log(`failed: ${error.code}`),
)
