/**
 * `npm start`: the demo platform on loopback with ready-to-paste curl lines. Ports default to
 * 7400 (identity provider), 7401 (gateway) and 7402 (office); set DEMO_ISSUER_PORT,
 * DEMO_GATEWAY_PORT or DEMO_OFFICE_PORT to change them (a taken port falls back to a free one).
 */
import { REALM, SERVICE_CLIENT, startDemo } from './servers.js'

function port(name: string, fallback: number): number {
  const value = process.env[name]
  if (value === undefined || value === '') return fallback
  const parsed = Number(value)
  if (!Number.isInteger(parsed) || parsed < 0 || parsed > 65_535) {
    throw new Error(`${name} must be a port number from 0 to 65535 (got ${JSON.stringify(value)})`)
  }
  return parsed
}

const demo = await startDemo({
  issuer: port('DEMO_ISSUER_PORT', 7400),
  gateway: port('DEMO_GATEWAY_PORT', 7401),
  office: port('DEMO_OFFICE_PORT', 7402),
})
const { issuer, gatewayUrl, officeUrl } = demo
const lifetime = 3600
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

console.log(`tollgate demo (tokens valid for ${lifetime / 60} minutes)

  identity provider  ${issuer.issuer(REALM)}  (JWKS: ${issuer.jwksUri(REALM)})
  gateway (Express)  ${gatewayUrl}   audience "gateway", tenant from the "tenant" claim, free plan 5 req/min
  office (Koa)       ${officeUrl}   audience "office"

200, gateway token at the gateway (tenant acme; the 6th call within a minute answers 429):
  curl -i ${billing} -H 'Accept: application/json' -H 'Authorization: Bearer ${gatewayToken}'

200, tenant globex (pro plan, 100 req/min) is limited separately:
  curl -i ${billing} -H 'Authorization: Bearer ${globexToken}'

401, the office token at the gateway (wrong audience):
  curl -i ${billing} -H 'Authorization: Bearer ${officeToken}'

200, the office token at the office product:
  curl -i ${officeUrl}/api/namespaces -H 'Authorization: Bearer ${officeToken}'

A token by Client Credentials, as a backend would get one:
  curl -s ${issuer.issuer(REALM)}/protocol/openid-connect/token -d grant_type=client_credentials -d client_id=${SERVICE_CLIENT.clientId} -d client_secret=${SERVICE_CLIENT.clientSecret}

Every case at once: npm run walkthrough        Stop: Ctrl-C
`)

const stop = async () => {
  await demo.close()
  process.exit(0)
}
process.once('SIGINT', stop)
process.once('SIGTERM', stop)
