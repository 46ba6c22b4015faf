import { keycloak, tollgate } from 'tollgate/fetch'

const auth = tollgate({
  issuers: keycloak({
    authUrl: Bun.env.KEYCLOAK_URL ?? 'https://sso.example.com',
    realms: ['acme'],
  }),
  audience: 'gateway',
})

const invoices = auth.withAuth((_request, user) => Response.json({ subject: user?.subject }), {
  scopes: ['billing:read'],
})

Bun.serve({
  hostname: '127.0.0.1',
  port: Number(Bun.env.PORT ?? 3000),
  fetch(request) {
    if (new URL(request.url).pathname === '/invoices') return invoices(request)
    return new Response('Not Found', { status: 404 })
  },
})
