import { type FetchTollgate, keycloak, tollgate } from 'tollgate/fetch'

interface Env {
  readonly KEYCLOAK_URL: string
}

// Built on the first request: a module worker receives `env` with each request, not at load.
let auth: FetchTollgate | undefined
let invoices: ((request: Request) => Promise<Response>) | undefined

export default {
  fetch(request: Request, env: Env): Promise<Response> | Response {
    auth ??= tollgate({
      issuers: keycloak({ authUrl: env.KEYCLOAK_URL, realms: ['acme'] }),
      audience: 'gateway',
    })
    invoices ??= auth.withAuth((_request, user) => Response.json({ subject: user?.subject }), {
      scopes: ['billing:read'],
    })
    if (new URL(request.url).pathname === '/invoices') return invoices(request)
    return new Response('Not Found', { status: 404 })
  },
}
