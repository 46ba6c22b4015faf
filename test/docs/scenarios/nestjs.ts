/** docs/frameworks/nestjs.md: each sample in a NestJS application on the Express platform. */
import { expect } from 'vitest'

import { freePort } from '../../helpers/redis.js'
import { answer, bearer, type ScenarioTable } from '../scenario.js'

const METADATA = 'https://api.example.com/.well-known/oauth-protected-resource/mcp'

export const NESTJS: ScenarioTable = {
  'docs/frameworks/nestjs.md': {
    'A complete application': [
      {
        promises:
          'bootstrap(): /invoices with billing:read 200 with subject and scopes; no token 401; no scope 403; @Public() /health 200 without a token',
        async run({ start, world: { kit } }) {
          const app = await start({ host: 'nest.ts' })
          const token = await kit.mint({ sub: 'alice', scope: 'billing:read' })
          expect(await answer(await app.fetch('/invoices', bearer(token)))).toEqual({
            status: 200,
            body: { subject: 'alice', scopes: ['billing:read'] },
          })
          const anonymous = await app.fetch('/invoices')
          // The guard knows the route's @RequireScopes: its 401 names them.
          expect(anonymous.headers.get('www-authenticate')).toBe(
            'Bearer realm="api", scope="billing:read"',
          )
          expect(anonymous.status).toBe(401)
          const unscoped = await kit.mint({ scope: 'openid' })
          expect((await app.fetch('/invoices', bearer(unscoped))).status).toBe(403)
          expect(await answer(await app.fetch('/health'))).toEqual({
            status: 200,
            body: { ok: true },
          })
        },
      },
      {
        promises:
          'the Fastify bootstrap of the module above (app.module.ts): /invoices with billing:read 200; no token 401; /health 200',
        async run({ start, world: { kit } }) {
          const app = await start()
          const token = await kit.mint({ sub: 'alice', scope: 'billing:read' })
          expect(await answer(await app.fetch('/invoices', bearer(token)))).toEqual({
            status: 200,
            body: { subject: 'alice', scopes: ['billing:read'] },
          })
          expect((await app.fetch('/invoices')).status).toBe(401)
          expect(await answer(await app.fetch('/health'))).toEqual({
            status: 200,
            body: { ok: true },
          })
        },
      },
    ],

    'Guarding some controllers only': {
      promises:
        'the guarded /invoices 200 with billing:read, 401 without a token, 403 without the scope; /catalog 200 without a token',
      async run({ start, world: { kit } }) {
        const app = await start({ host: 'nest.ts' })
        const token = await kit.mint({ sub: 'alice', scope: 'billing:read' })
        expect(await answer(await app.fetch('/invoices', bearer(token)))).toEqual({
          status: 200,
          body: { subject: 'alice' },
        })
        expect((await app.fetch('/invoices')).status).toBe(401)
        const unscoped = await kit.mint({ scope: 'openid' })
        expect((await app.fetch('/invoices', bearer(unscoped))).status).toBe(403)
        expect(await answer(await app.fetch('/catalog'))).toEqual({
          status: 200,
          body: { products: ['office'] },
        })
      },
    },

    'Handling refusals yourself': {
      promises:
        "with errorHandling 'framework' and the filter registered: no token 401 with WWW-Authenticate and the error's code; a valid token 200",
      async run({ start, world: { kit } }) {
        const app = await start({ host: 'nest-parts.ts' })
        const anonymous = await app.fetch('/invoices')
        expect(anonymous.headers.get('www-authenticate')).toBe('Bearer realm="api"')
        expect(await answer(anonymous)).toEqual({
          status: 401,
          body: { code: 'ERR_TOKEN_MISSING' },
        })
        const token = await kit.mint({ sub: 'alice' })
        expect(await answer(await app.fetch('/invoices', bearer(token)))).toEqual({
          status: 200,
          body: { ok: true },
        })
      },
    },

    'Operating the gate': {
      promises:
        'GET /ready without a token 200 with the report, 503 while the keys cannot be fetched; /invoices without a token 401',
      async run({ start }) {
        const app = await start({ host: 'nest-parts.ts' })
        expect(await answer(await app.fetch('/ready'))).toMatchObject({
          status: 200,
          body: { ready: true },
        })
        expect((await app.fetch('/invoices')).status).toBe(401)
        const down = await start({
          host: 'nest-parts.ts',
          env: { KEYCLOAK_URL: `http://127.0.0.1:${await freePort()}` },
        })
        expect((await down.fetch('/ready')).status).toBe(503)
      },
    },

    'Protected resource metadata (RFC 9728)': {
      promises:
        'the metadata 200 without a token; /mcp without a token 401 naming it; a token for the resource with mcp:tools 200; no scope 403',
      async run({ start, world: { kit } }) {
        const app = await start({ host: 'nest.ts' })
        const metadata = await app.fetch('/.well-known/oauth-protected-resource/mcp')
        expect(metadata.headers.get('cache-control')).toBe('public, max-age=3600')
        expect(await answer(metadata)).toMatchObject({
          status: 200,
          body: { resource: 'https://api.example.com/mcp', scopes_supported: ['mcp:tools'] },
        })
        const anonymous = await app.fetch('/mcp')
        expect(anonymous.status).toBe(401)
        expect(anonymous.headers.get('www-authenticate')).toBe(
          `Bearer realm="api", scope="mcp:tools", resource_metadata="${METADATA}"`,
        )
        const claims = { aud: 'https://api.example.com/mcp', sub: 'alice' }
        const token = await kit.mint({ ...claims, scope: 'mcp:tools' })
        expect(await answer(await app.fetch('/mcp', bearer(token)))).toEqual({
          status: 200,
          body: { subject: 'alice', tools: [] },
        })
        const unscoped = await kit.mint({ ...claims, scope: 'openid' })
        expect((await app.fetch('/mcp', bearer(unscoped))).status).toBe(403)
      },
    },

    "Revocation: back-channel logout and Keycloak's push not-before": {
      promises:
        "a session's token 200; POST /backchannel-logout with its logout token 200 (empty, no-store), then the token 401; a forged logout token 400 invalid logout token",
      async run({ start, world: { kit } }) {
        const app = await start({ host: 'nest.ts' })
        const token = await kit.mint({ sub: 'alice', sid: 'alice-session' })
        expect(await answer(await app.fetch('/invoices', bearer(token)))).toEqual({
          status: 200,
          body: { subject: 'alice' },
        })
        const logout = (logoutToken: string) =>
          app.fetch('/backchannel-logout', {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ logout_token: logoutToken }).toString(),
          })
        const logoutToken = await kit.mintLogoutToken({ sub: 'alice', sid: 'alice-session' })
        const loggedOut = await logout(logoutToken)
        expect(loggedOut.headers.get('cache-control')).toBe('no-store')
        expect(await answer(loggedOut)).toEqual({ status: 200, body: undefined })
        expect((await app.fetch('/invoices', bearer(token))).status).toBe(401)
        const [head, body] = logoutToken.split('.')
        expect(await answer(await logout(`${head}.${body}.${'A'.repeat(342)}`))).toEqual({
          status: 400,
          body: { error: 'invalid_request', error_description: 'invalid logout token' },
        })
      },
    },
  },
}
