/**
 * What `npm start` prints: the services' URLs and ready-to-paste curl lines, each with a token
 * valid for `lifetimeSeconds` (the banner's first line says how long), the user's token that the
 * gateway exchanges included.
 *
 * @module
 */
import { DEMO_USERS, type Demo, OFFICE_WEB_CLIENT, REALM, SERVICE_CLIENT } from './servers.js'
import { GATEWAY_SIGNALS } from './signals.js'

/** How long the banner's tokens are valid: an afternoon's trying, in seconds. */
export const BANNER_TOKEN_LIFETIME_SECONDS = 3600

/** The banner of a running demo, with tokens minted now. */
export async function bannerOf(
  demo: Demo,
  lifetime = BANNER_TOKEN_LIFETIME_SECONDS,
): Promise<string> {
  const { issuer, gatewayUrl, officeUrl, signInProvider } = demo
  const gatewayToken = await issuer.mint(
    { tenant: 'acme', scope: 'openid billing:read' },
    { expiresInSeconds: lifetime },
  )
  const globexToken = await issuer.mint(
    { tenant: 'globex', scope: 'openid billing:read' },
    { expiresInSeconds: lifetime },
  )
  const officeToken = await issuer.mint(
    { aud: 'office', scope: 'openid office:records:read office:records:write' },
    { expiresInSeconds: lifetime },
  )
  const billing = `${gatewayUrl}/api/v1/billing/subscriptions`
  // Alice's gateway token as signing in at the office web front gives it (exchangeable by the gateway).
  const aliceGateway = await signInProvider.accessTokenFor('alice', {
    clientId: OFFICE_WEB_CLIENT.clientId,
    resource: 'urn:platform:gateway',
    scope: 'billing:read',
    // As long as the others: the gateway exchanges it anew for each office token it needs (the
    // provider's office tokens live 5 minutes), so the line works as long as this token does.
    expiresInSeconds: lifetime,
  })

  return `tollgate demo (the tokens below are valid for ${lifetime / 60} minutes)

  identity provider  ${issuer.issuer(REALM)}  (JWKS: ${issuer.jwksUri(REALM)})
  gateway (Express)  ${gatewayUrl}   audience "gateway", tenant from the "tenant" claim, free plan 5 req/min
  office (Koa)       ${officeUrl}   audience "office"
  sign-in provider   ${signInProvider.issuer}  (tollgate/testing's createDevProvider(), Keycloak paths)
  Shared Signals     the provider's sign-outs and disabled accounts: pushed to the gateway (${gatewayUrl}${GATEWAY_SIGNALS.path}), polled by the office

In a browser: ${officeUrl}/  → Sign in (choose ${DEMO_USERS.map((user) => user.sub).join(' or ')} on the provider's page) → your
office data, fetched with your office token, and the gateway's billing answer, with your gateway
token. Sign out at the office page, and confirm at the provider: the gateway and the office refuse
that user's tokens within a second (the walkthrough times it).

200, gateway token at the gateway (tenant acme; the 6th call within a minute answers 429):
  curl -i ${billing} -H 'Accept: application/json' -H 'Authorization: Bearer ${gatewayToken}'

200, tenant globex (pro plan, 100 req/min) is limited separately:
  curl -i ${billing} -H 'Authorization: Bearer ${globexToken}'

401, the office token at the gateway (wrong audience):
  curl -i ${billing} -H 'Authorization: Bearer ${officeToken}'

200, the office token at the office product:
  curl -i ${officeUrl}/api/namespaces -H 'Authorization: Bearer ${officeToken}'

200, a backend call: the gateway calls the office product with its own office token (Client
Credentials through tollgate/client: obtained once, reused, renewed before it expires):
  curl -i ${gatewayUrl}/api/v1/office/namespaces -H 'Authorization: Bearer ${globexToken}'

200, on the user's behalf: the gateway exchanges Alice's gateway token (token exchange, RFC 8693)
for an office token naming her and the gateway as actor, and reads her office data with it:
  curl -i ${gatewayUrl}/api/v1/office/my-namespaces -H 'Authorization: Bearer ${aliceGateway}'

A token by Client Credentials, as a backend would get one:
  curl -s ${issuer.issuer(REALM)}/protocol/openid-connect/token -d grant_type=client_credentials -d client_id=${SERVICE_CLIENT.clientId} -d client_secret=${SERVICE_CLIENT.clientSecret}

Every case at once: npm run walkthrough        Stop: Ctrl-C
`
}
