import { createGate, keycloak } from 'tollgate'
import { createTokenSource } from 'tollgate/client'
import { createDevProvider } from 'tollgate/testing'

const provider = await createDevProvider({
  realm: 'dev',
  users: [{ sub: 'alice', name: 'Alice Example', email: 'alice@example.com' }],
  resources: {
    'https://orders.example': { audience: 'orders', scopes: ['orders:read', 'orders:write'] },
  },
  clients: [
    // A backend job (client_credentials); `jwks: { keys: [publicJwk] }` instead of a secret
    // registers a private_key_jwt client.
    { clientId: 'orders-job', clientSecret: 'dev-only-secret', scopes: ['orders:read'] },
    // A web front signing users in (authorization_code with PKCE, refresh_token).
    {
      clientId: 'orders-web',
      clientSecret: 'dev-only-web-secret',
      redirectUris: ['http://127.0.0.1:3000/auth/callback'],
      backchannelLogoutUri: 'http://127.0.0.1:3000/auth/backchannel-logout',
    },
  ],
})

// The job's token: audience and scope are those it asked for.
const orders = createTokenSource({
  issuer: keycloak({ authUrl: provider.url, realm: 'dev' }),
  clientId: 'orders-job',
  clientSecret: 'dev-only-secret',
  scope: 'orders:read',
  resource: 'https://orders.example',
})
const token = await orders.get()

// The orders API's gate admits it.
const gate = createGate({
  issuers: keycloak({ authUrl: provider.url, realms: ['dev'] }),
  audience: 'orders',
})
const { auth } = await gate.check({ headers: { authorization: `Bearer ${token}` } })
console.log(auth?.clientId, auth?.scopes) // orders-job [ 'orders:read' ]

orders.close()
await provider.close()
