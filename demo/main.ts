/**
 * `npm start`: the demo platform on loopback with ready-to-paste curl lines. Ports default to
 * 7400 (identity provider), 7401 (gateway), 7402 (office) and 7403 (sign-in provider); set
 * DEMO_ISSUER_PORT, DEMO_GATEWAY_PORT, DEMO_OFFICE_PORT or DEMO_SIGNIN_PORT to change them (0: any
 * free port). A taken port stops the
 * demo with one line naming the variable that moves it.
 *
 * It stops, its ports freed, on SIGINT, SIGTERM or SIGHUP, and when the process that started it
 * ends: `npm start` execs this process in place of its shell, so npm's forwarded SIGINT and
 * SIGTERM reach it, and an npm ended otherwise (SIGHUP, which npm does not forward, or SIGKILL)
 * leaves it with another parent, which it notices within half a second.
 */
import {
  DEMO_USERS,
  type Demo,
  type DemoPorts,
  OFFICE_WEB_CLIENT,
  PortInUseError,
  REALM,
  SERVICE_CLIENT,
  startDemo,
} from './servers.js'

const PORT_VARIABLES: Record<keyof DemoPorts, string> = {
  issuer: 'DEMO_ISSUER_PORT',
  gateway: 'DEMO_GATEWAY_PORT',
  office: 'DEMO_OFFICE_PORT',
  signIn: 'DEMO_SIGNIN_PORT',
}

function port(name: string, fallback: number): number {
  const value = process.env[name]
  if (value === undefined || value === '') return fallback
  const parsed = Number(value)
  if (!Number.isInteger(parsed) || parsed < 0 || parsed > 65_535) {
    console.error(
      `demo: ${name} must be a port number from 0 to 65535 (got ${JSON.stringify(value)})`,
    )
    process.exit(1)
  }
  return parsed
}

let demo: Demo
try {
  demo = await startDemo({
    issuer: port(PORT_VARIABLES.issuer, 7400),
    gateway: port(PORT_VARIABLES.gateway, 7401),
    office: port(PORT_VARIABLES.office, 7402),
    signIn: port(PORT_VARIABLES.signIn, 7403),
  })
} catch (error) {
  if (!(error instanceof PortInUseError)) throw error
  const variable = PORT_VARIABLES[error.service]
  console.error(
    `demo: port ${error.port} (${error.service}) is in use; set ${variable} to another port, or ${variable}=0 for any free one`,
  )
  process.exit(1)
}
const { issuer, gatewayUrl, officeUrl, signInProvider } = demo
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
// Alice's gateway token as signing in at the office web front gives it (exchangeable by the gateway).
const aliceGateway = await signInProvider.accessTokenFor('alice', {
  clientId: OFFICE_WEB_CLIENT.clientId,
  resource: 'urn:platform:gateway',
  scope: 'billing:read',
})

console.log(`tollgate demo (tokens valid for ${lifetime / 60} minutes)

  identity provider  ${issuer.issuer(REALM)}  (JWKS: ${issuer.jwksUri(REALM)})
  gateway (Express)  ${gatewayUrl}   audience "gateway", tenant from the "tenant" claim, free plan 5 req/min
  office (Koa)       ${officeUrl}   audience "office"
  sign-in provider   ${signInProvider.issuer}  (tollgate/testing's createDevProvider(), Keycloak paths)

In a browser: ${officeUrl}/  → Sign in (choose ${DEMO_USERS.map((user) => user.sub).join(' or ')} on the provider's page) → your
office data, fetched with your office token, and the gateway's billing answer, with your gateway
token. Sign out at the office page, and confirm at the provider.

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
`)

/** How long closing may take before the demo exits all the same. */
const CLOSE_DEADLINE_MS = 5000
let stopping = false
const stop = () => {
  // A second signal while closing: leave at once.
  if (stopping) process.exit(1)
  stopping = true
  setTimeout(() => process.exit(1), CLOSE_DEADLINE_MS).unref()
  demo.close().then(
    () => process.exit(0),
    () => process.exit(1),
  )
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, stop)
// The parent ended without a signal for us (npm killed by SIGHUP or SIGKILL): we were adopted.
const parent = process.ppid
setInterval(() => {
  if (!stopping && process.ppid !== parent) stop()
}, 500).unref()
