/**
 * The provider guides (docs/providers/, docs/keycloak.md): each setup serves its routes against
 * the test issuer posing as that provider (its real issuer in `iss`, keys at the URL its profile
 * builds, test/docs/world.ts), with tokens laid out as the provider issues them
 * (test/providers/shapes.ts).
 *
 * The setups guard routes with a guard alone (`app.get(path, auth.requireScopes(…), handler)`,
 * no `app.use(auth)`): such a guard runs its gate. If it did not, their admitted requests would
 * fail here (401, as if no token were sent), as they would for a user who copies them.
 */
import { expect } from 'vitest'

import {
  AUTH0,
  auth0IdToken,
  auth0MachineToken,
  auth0UserToken,
  COGNITO,
  cognitoAccessToken,
  cognitoIdToken,
  ENTRA,
  entraV1UserToken,
  entraV2AppToken,
  entraV2UserToken,
  NO_TYP,
  oktaAccessToken,
  oktaIdToken,
} from '../../providers/shapes.js'
import { answer, bearer, type ScenarioTable } from '../scenario.js'

const OK = { status: 200, body: { ok: true } }

export const PROVIDERS: ScenarioTable = {
  'docs/providers/auth0.md': {
    'The setup': {
      promises:
        'a user token with the permission and a machine token with the scope 200 (keys from /.well-known/jwks.json); an ID token and a /userinfo-only token 401; no permission 403',
      async run({ start, world: { kit } }) {
        const api = await start()
        const mint = (claims: Record<string, unknown>) => kit.mint(claims, { realm: 'auth0' })
        const user = await mint(auth0UserToken({ scope: 'openid', permissions: ['read:messages'] }))
        expect(await answer(await api.fetch('/messages', bearer(user)))).toEqual(OK)
        expect(kit.fetchCount('auth0')).toBeGreaterThan(0)
        const machine = await mint(auth0MachineToken({ permissions: [] }))
        expect(await answer(await api.fetch('/messages', bearer(machine)))).toEqual(OK)

        const idToken = await mint(auth0IdToken())
        expect((await api.fetch('/messages', bearer(idToken))).status).toBe(401)
        const userinfoOnly = await mint(auth0UserToken({ aud: `${AUTH0.issuer}userinfo` }))
        expect((await api.fetch('/messages', bearer(userinfoOnly))).status).toBe(401)
        const noPermission = await mint(auth0UserToken({ permissions: ['write:messages'] }))
        expect((await api.fetch('/messages', bearer(noPermission))).status).toBe(403)
      },
    },
  },

  'docs/providers/okta.md': {
    'The setup': {
      promises:
        'an access token of the default server with orders:read in scp 200 (keys from /oauth2/default/v1/keys); another application (cid) and an ID token 401; no scope 403',
      async run({ start, world: { kit } }) {
        const api = await start()
        const mint = (claims: Record<string, unknown>) =>
          kit.mint(claims, { realm: 'okta', ...NO_TYP })
        const token = await mint(oktaAccessToken())
        expect(await answer(await api.fetch('/orders', bearer(token)))).toEqual(OK)
        expect(kit.fetchCount('okta')).toBeGreaterThan(0)

        const otherApp = await mint(oktaAccessToken({ cid: '0oa9z9z9z9z9z9z9z9z9' }))
        expect((await api.fetch('/orders', bearer(otherApp))).status).toBe(401)
        const idToken = await mint(oktaIdToken())
        expect((await api.fetch('/orders', bearer(idToken))).status).toBe(401)
        const unscoped = await mint(oktaAccessToken({ scp: ['openid'] }))
        expect((await api.fetch('/orders', bearer(unscoped))).status).toBe(403)
      },
    },
  },

  'docs/providers/entra.md': {
    'The setup': {
      promises:
        'a delegated v2.0 token 200 at /tasks and an app-only token 200 at /admin/tasks; another tenant and a v1.0 token 401; a user token at /admin/tasks 403',
      async run({ start, world: { kit } }) {
        const api = await start()
        const mint = (claims: Record<string, unknown>) =>
          kit.mint(claims, { realm: 'entra', ...NO_TYP })
        const user = await mint(entraV2UserToken())
        expect(await answer(await api.fetch('/tasks', bearer(user)))).toEqual(OK)
        expect(kit.fetchCount('entra')).toBeGreaterThan(0)
        const app = await mint(entraV2AppToken())
        expect(await answer(await api.fetch('/admin/tasks', bearer(app)))).toEqual(OK)

        const stranger = await mint(entraV2UserToken(ENTRA.stranger))
        expect((await api.fetch('/tasks', bearer(stranger))).status).toBe(401)
        const v1 = await mint(entraV1UserToken())
        expect((await api.fetch('/tasks', bearer(v1))).status).toBe(401)
        expect((await api.fetch('/admin/tasks', bearer(user))).status).toBe(403)
      },
    },
  },

  'docs/providers/cognito.md': {
    'The setup': {
      promises:
        'an access token without aud of a listed client 200 at /orders and, in group admins, at /admin; an ID token and another client 401; no group 403',
      async run({ start, world: { kit } }) {
        const api = await start()
        const mint = (claims: Record<string, unknown>) =>
          kit.mint(claims, { realm: 'cognito', ...NO_TYP })
        const token = await mint(cognitoAccessToken())
        expect(await answer(await api.fetch('/orders', bearer(token)))).toEqual(OK)
        expect(kit.fetchCount('cognito')).toBeGreaterThan(0)
        expect(await answer(await api.fetch('/admin', bearer(token)))).toEqual(OK)

        const idToken = await mint(cognitoIdToken())
        expect((await api.fetch('/orders', bearer(idToken))).status).toBe(401)
        const otherClient = await mint(cognitoAccessToken({ client_id: COGNITO.otherClient }))
        expect((await api.fetch('/orders', bearer(otherClient))).status).toBe(401)
        const noGroup = await mint(cognitoAccessToken({ 'cognito:groups': undefined }))
        expect((await api.fetch('/admin', bearer(noGroup))).status).toBe(403)
      },
    },
  },

  'docs/providers/generic-oidc.md': {
    'The setup': {
      promises:
        'a token of https://idp.example.com/api/oidc (keys found by discovery) 200; the same issuer with a trailing slash 401',
      async run({ start, world: { kit } }) {
        const api = await start()
        const claims = { aud: 'https://api.example.com', sub: 'alice' }
        const token = await kit.mint(claims, { realm: 'idp-oidc' })
        expect(await answer(await api.fetch('/orders', bearer(token)))).toEqual({
          status: 200,
          body: { user: 'alice' },
        })
        expect(kit.discoveryCount('idp-oidc')).toBeGreaterThan(0)
        const slash = await kit.mint(
          { ...claims, iss: 'https://idp.example.com/api/oidc/' },
          { realm: 'idp-oidc' },
        )
        expect((await api.fetch('/orders', bearer(slash))).status).toBe(401)
      },
    },
    'Claims in other places': {
      promises:
        'scopes from scope and permissions, roles from groups, the client from cid, the tenant from org_id: 200; not in admins 403; no org_id 401',
      async run({ start, world: { kit } }) {
        const api = await start()
        const claims = {
          aud: 'https://api.example.com',
          scope: 'reports:read',
          permissions: ['reports:export'],
          groups: ['admins'],
          cid: 'reporting-app',
          azp: undefined,
          org_id: 'acme',
        }
        const token = await kit.mint(claims, { realm: 'idp' })
        const admitted = await answer(await api.fetch('/reports', bearer(token)))
        expect(admitted).toMatchObject({
          status: 200,
          body: { client: 'reporting-app', tenant: 'acme' },
        })
        expect([...(admitted.body as { scopes: string[] }).scopes].sort()).toEqual([
          'reports:export',
          'reports:read',
        ])
        const notAdmin = await kit.mint({ ...claims, groups: ['staff'] }, { realm: 'idp' })
        expect((await api.fetch('/reports', bearer(notAdmin))).status).toBe(403)
        const noTenant = await kit.mint({ ...claims, org_id: undefined }, { realm: 'idp' })
        expect((await api.fetch('/reports', bearer(noTenant))).status).toBe(401)
      },
    },
  },

  'docs/keycloak.md': {
    'The setup': {
      promises:
        'tokens of https://sso.example.com/realms/acme 200 with billing:read, the realm role admin, the client role office/editor; no tenant 401; a missing role 403',
      async run({ start, world: { kit } }) {
        const api = await start()
        const mint = (claims: Record<string, unknown>) =>
          kit.mint({ aud: 'gateway', tenant: 'acme', ...claims }, { realm: 'sso' })
        const billing = await mint({ scope: 'billing:read' })
        expect(await answer(await api.fetch('/billing', bearer(billing)))).toEqual(OK)
        const admin = await mint({ realm_access: { roles: ['admin'] } })
        expect(await answer(await api.fetch('/admin', bearer(admin)))).toEqual(OK)
        const editor = await mint({ resource_access: { office: { roles: ['editor'] } } })
        expect(await answer(await api.fetch('/docs', bearer(editor)))).toEqual(OK)

        const noTenant = await mint({ scope: 'billing:read', tenant: undefined })
        expect((await api.fetch('/billing', bearer(noTenant))).status).toBe(401)
        expect((await api.fetch('/admin', bearer(billing))).status).toBe(403)
      },
    },
  },
}
