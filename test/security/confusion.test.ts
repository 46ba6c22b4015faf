/**
 * Attack class: issuer, audience and token-type confusion (RFC 8725 §3.8–3.12, RFC 9068, RFC 9700
 * §2.3). Near-miss issuers, keys of one realm used for another, audience arrays and look-alikes,
 * ID/refresh/logout tokens presented as access tokens, and scope look-alikes. Every token here is
 * validly signed by a key the gate trusts, so only the claim checks can refuse it.
 */
import { afterAll, beforeAll, describe, it } from 'vitest'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import {
  bearer,
  type Case,
  INVALID_TOKEN,
  insufficientScope,
  OK,
  type Probe,
  useApps,
} from './helpers.js'
import { accessClaims, hmacToken, type Json, kidOf, privateKeyOf, signWith } from './tokens.js'

let issuer: TestIssuer
const kids = { acme: '', globex: '', initech: '' }

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme', 'globex', 'initech'], audience: 'gateway' })
  for (const realm of Object.keys(kids) as (keyof typeof kids)[]) {
    kids[realm] = await kidOf(issuer, 'RS256', realm)
  }
})
afterAll(async () => {
  await issuer.close()
})

// Two trusted realms at one provider; "initech" exists there but is not trusted.
const options = (extra: object = {}) => ({
  issuers: keycloak({ authUrl: issuer.url, realms: ['acme', 'globex'] }),
  audience: 'gateway',
  ...extra,
})

type Realm = keyof typeof kids

/** Signed by `keyRealm`'s key, with `kid` naming it, claiming `overrides` over acme's defaults. */
function token(overrides: Json, keyRealm: Realm = 'acme', header: Json = {}): string {
  return signWith(
    privateKeyOf(issuer, kids[keyRealm]),
    'RS256',
    { alg: 'RS256', typ: 'JWT', kid: kids[keyRealm], ...header },
    accessClaims(issuer, overrides),
  )
}

const at = (path: string, probe: Probe): Probe => ({ ...probe, path })

describe('with the access profile (default)', () => {
  const apps = useApps(() => options())

  const issuers: Case[] = [
    ['iss of realm acme (control)', () => bearer(token({})), OK],
    [
      'iss of realm globex signed by globex (control)',
      () => bearer(token({ iss: issuer.issuer('globex') }, 'globex')),
      OK,
    ],
    [
      'iss with the realm upper-cased',
      () => bearer(token({ iss: issuer.issuer('ACME') })),
      INVALID_TOKEN,
    ],
    [
      'iss with a trailing slash',
      () => bearer(token({ iss: `${issuer.issuer('acme')}/` })),
      INVALID_TOKEN,
    ],
    [
      'iss with https instead of http',
      () => bearer(token({ iss: issuer.issuer('acme').replace('http:', 'https:') })),
      INVALID_TOKEN,
    ],
    [
      'iss with localhost instead of 127.0.0.1',
      () => bearer(token({ iss: issuer.issuer('acme').replace('127.0.0.1', 'localhost') })),
      INVALID_TOKEN,
    ],
    [
      'iss with the default port spelled out differently',
      () => bearer(token({ iss: issuer.issuer('acme').replace(/:(\d+)\//, ':0$1/') })),
      INVALID_TOKEN,
    ],
    [
      'iss of an untrusted realm at the same provider',
      () => bearer(token({ iss: issuer.issuer('initech') }, 'initech')),
      INVALID_TOKEN,
    ],
    [
      'iss of an untrusted realm, signed by a trusted key',
      () => bearer(token({ iss: issuer.issuer('initech') })),
      INVALID_TOKEN,
    ],
    [
      'iss with an extra path segment',
      () => bearer(token({ iss: `${issuer.issuer('acme')}/extra` })),
      INVALID_TOKEN,
    ],
    [
      'iss as a prefix of the trusted one',
      () => bearer(token({ iss: issuer.issuer('acme').slice(0, -1) })),
      INVALID_TOKEN,
    ],
    [
      'iss with a query string',
      () => bearer(token({ iss: `${issuer.issuer('acme')}?x=1` })),
      INVALID_TOKEN,
    ],
    [
      'iss with surrounding spaces',
      () => bearer(token({ iss: ` ${issuer.issuer('acme')} ` })),
      INVALID_TOKEN,
    ],
    [
      'iss with a percent-encoded realm',
      () => bearer(token({ iss: issuer.issuer('acme').replace('acme', '%61cme') })),
      INVALID_TOKEN,
    ],
    [
      'iss with dot segments',
      () => bearer(token({ iss: issuer.issuer('acme').replace('/realms/', '/realms/x/../') })),
      INVALID_TOKEN,
    ],
    [
      'iss as an array holding the trusted issuer',
      () => bearer(token({ iss: [issuer.issuer('acme')] })),
      INVALID_TOKEN,
    ],
    ['iss missing', () => bearer(token({ iss: undefined })), INVALID_TOKEN],
    ['iss null', () => bearer(token({ iss: null })), INVALID_TOKEN],
    [
      'iss as an object',
      () => bearer(token({ iss: { toString: issuer.issuer('acme') } })),
      INVALID_TOKEN,
    ],
    ['iss "__proto__"', () => bearer(token({ iss: '__proto__' })), INVALID_TOKEN],
  ]

  const crossRealm: Case[] = [
    [
      'a token claiming acme signed by the globex key (globex kid)',
      () => bearer(token({}, 'globex')),
      INVALID_TOKEN,
    ],
    [
      'a token claiming globex signed by the acme key (acme kid)',
      () => bearer(token({ iss: issuer.issuer('globex') }, 'acme')),
      INVALID_TOKEN,
    ],
    [
      'a token claiming acme with the acme kid, signed by the globex key',
      () =>
        bearer(
          signWith(
            privateKeyOf(issuer, kids.globex),
            'RS256',
            { alg: 'RS256', kid: kids.acme },
            accessClaims(issuer),
          ),
        ),
      INVALID_TOKEN,
    ],
    [
      'a token claiming acme without kid, signed by the globex key',
      () =>
        bearer(
          signWith(
            privateKeyOf(issuer, kids.globex),
            'RS256',
            { alg: 'RS256' },
            accessClaims(issuer),
          ),
        ),
      INVALID_TOKEN,
    ],
    [
      'a token claiming acme signed by the untrusted initech key',
      () => bearer(token({}, 'initech')),
      INVALID_TOKEN,
    ],
  ]

  const audiences: Case[] = [
    ['aud "office" (another product)', () => bearer(token({ aud: 'office' })), INVALID_TOKEN],
    ['aud ["office"]', () => bearer(token({ aud: ['office'] })), INVALID_TOKEN],
    ['aud ["office", "gateway"]', () => bearer(token({ aud: ['office', 'gateway'] })), OK],
    ['aud ["gateway"]', () => bearer(token({ aud: ['gateway'] })), OK],
    ['aud []', () => bearer(token({ aud: [] })), INVALID_TOKEN],
    ['aud missing', () => bearer(token({ aud: undefined })), INVALID_TOKEN],
    ['aud null', () => bearer(token({ aud: null })), INVALID_TOKEN],
    ['aud "Gateway" (case)', () => bearer(token({ aud: 'Gateway' })), INVALID_TOKEN],
    ['aud "gateway " (trailing space)', () => bearer(token({ aud: 'gateway ' })), INVALID_TOKEN],
    [
      'aud "gateway office" (one string)',
      () => bearer(token({ aud: 'gateway office' })),
      INVALID_TOKEN,
    ],
    [
      'aud "gateway,office" (one string)',
      () => bearer(token({ aud: 'gateway,office' })),
      INVALID_TOKEN,
    ],
    ['aud [["gateway"]] (nested)', () => bearer(token({ aud: [['gateway']] })), INVALID_TOKEN],
    [
      'aud ["gateway", 123] (mixed types)',
      () => bearer(token({ aud: ['gateway', 123] })),
      INVALID_TOKEN,
    ],
    ['aud {"gateway": true}', () => bearer(token({ aud: { gateway: true } })), INVALID_TOKEN],
    ['aud "*"', () => bearer(token({ aud: '*' })), INVALID_TOKEN],
    ['aud of the client id only (azp)', () => bearer(token({ aud: 'test-client' })), INVALID_TOKEN],
  ]

  const types: Case[] = [
    [
      'a Keycloak ID token (payload typ "ID")',
      () => bearer(token({ typ: 'ID', nonce: 'n', at_hash: 'x' })),
      INVALID_TOKEN,
    ],
    [
      'a Keycloak refresh token (payload typ "Refresh")',
      () => bearer(token({ typ: 'Refresh' })),
      INVALID_TOKEN,
    ],
    [
      'a Keycloak offline token (payload typ "Offline")',
      () => bearer(token({ typ: 'Offline' })),
      INVALID_TOKEN,
    ],
    [
      'a Keycloak logout token (payload typ "Logout")',
      () => bearer(token({ typ: 'Logout' })),
      INVALID_TOKEN,
    ],
    [
      'a back-channel logout token (events claim, no typ)',
      () =>
        bearer(
          token({
            typ: undefined,
            events: { 'http://schemas.openid.net/event/backchannel-logout': {} },
            sid: 's',
          }),
        ),
      INVALID_TOKEN,
    ],
    [
      'a logout token by header typ "logout+jwt"',
      () => bearer(token({ typ: undefined }, 'acme', { typ: 'logout+jwt' })),
      INVALID_TOKEN,
    ],
    [
      'an ID token by header typ "id_token+jwt"',
      () => bearer(token({ typ: undefined }, 'acme', { typ: 'id_token+jwt' })),
      INVALID_TOKEN,
    ],
    [
      'a header typ "Refresh"',
      () => bearer(token({ typ: undefined }, 'acme', { typ: 'Refresh' })),
      INVALID_TOKEN,
    ],
    [
      'a header typ "secevent+jwt" (SET)',
      () => bearer(token({ typ: undefined }, 'acme', { typ: 'secevent+jwt' })),
      INVALID_TOKEN,
    ],
    ['a header typ 123', () => bearer(token({}, 'acme', { typ: 123 })), INVALID_TOKEN],
    ['a payload typ ["Bearer"]', () => bearer(token({ typ: ['Bearer'] })), INVALID_TOKEN],
    [
      'a Keycloak refresh token as Keycloak signs them (HS512)',
      () =>
        bearer(
          hmacToken(
            { alg: 'HS512', typ: 'JWT', kid: 'c0ffee' },
            accessClaims(issuer, { typ: 'Refresh' }),
            'realm-secret',
            'sha512',
          ),
        ),
      INVALID_TOKEN,
    ],
    ['header typ "at+jwt" (RFC 9068)', () => bearer(token({}, 'acme', { typ: 'at+jwt' })), OK],
    [
      'header typ "application/at+jwt"',
      () => bearer(token({}, 'acme', { typ: 'application/at+jwt' })),
      OK,
    ],
    ['header typ "JWT", payload typ "Bearer" (Keycloak access token)', () => bearer(token({})), OK],
    [
      'no typ anywhere (generic access token)',
      () => bearer(token({ typ: undefined }, 'acme', { typ: undefined })),
      OK,
    ],
    ['sub as a number', () => bearer(token({ sub: 42 })), INVALID_TOKEN],
    ['sub as an object', () => bearer(token({ sub: { id: 'admin' } })), INVALID_TOKEN],
  ]

  const scopes: Case[] = [
    [
      'scope "billing:read" (control)',
      () => at('/scoped', bearer(token({ scope: 'openid billing:read' }))),
      OK,
    ],
    [
      'scope "billing:read:all" (prefix look-alike)',
      () => at('/scoped', bearer(token({ scope: 'billing:read:all' }))),
      insufficientScope('billing:read'),
    ],
    [
      'scope "billing:readx"',
      () => at('/scoped', bearer(token({ scope: 'billing:readx' }))),
      insufficientScope('billing:read'),
    ],
    [
      'scope "BILLING:READ" (case)',
      () => at('/scoped', bearer(token({ scope: 'BILLING:READ' }))),
      insufficientScope('billing:read'),
    ],
    [
      'scope "openid,billing:read" (comma)',
      () => at('/scoped', bearer(token({ scope: 'openid,billing:read' }))),
      insufficientScope('billing:read'),
    ],
    [
      'scope "openid\\tbilling:read" (tab)',
      () => at('/scoped', bearer(token({ scope: 'openid\tbilling:read' }))),
      insufficientScope('billing:read'),
    ],
    [
      'scope "billing:*" (wildcard)',
      () => at('/scoped', bearer(token({ scope: 'billing:*' }))),
      insufficientScope('billing:read'),
    ],
    [
      'scope "openid" and scp ["billing:read"] (scope wins)',
      () => at('/scoped', bearer(token({ scope: 'openid', scp: ['billing:read'] }))),
      insufficientScope('billing:read'),
    ],
    [
      'scp ["billing:read"] alone',
      () => at('/scoped', bearer(token({ scope: undefined, scp: ['billing:read'] }))),
      OK,
    ],
    [
      'scope as an object {"billing:read": true}',
      () => at('/scoped', bearer(token({ scope: { 'billing:read': true } }))),
      INVALID_TOKEN,
    ],
    [
      'role "admin" only in resource_access',
      () => at('/realm-role', bearer(token({ resource_access: { office: { roles: ['admin'] } } }))),
      insufficientScope('admin'),
    ],
    [
      'client role granted for another client',
      () =>
        at('/client-role', bearer(token({ resource_access: { billing: { roles: ['editor'] } } }))),
      insufficientScope('editor'),
    ],
    [
      'client role as a realm role',
      () => at('/client-role', bearer(token({ realm_access: { roles: ['editor'] } }))),
      insufficientScope('editor'),
    ],
  ]

  describe.each([
    ['near-miss and untrusted issuers', issuers],
    ['keys of one realm used for another', crossRealm],
    ['audience', audiences],
    ['token type and subject', types],
    ['scope and role look-alikes', scopes],
  ] as const)('confusion: %s', (_title, cases) => {
    it.each(cases)('%s', async (_name, probe, expected) => {
      await apps.expectAll(await probe(), expected)
    })
  })
})

describe('with the rfc9068 profile', () => {
  const apps = useApps(() => options({ tokenProfile: 'rfc9068' }))
  const full = { client_id: 'test-client', jti: 'j-1' }

  const cases: Case[] = [
    [
      'header typ "at+jwt" with every required claim',
      () => bearer(token(full, 'acme', { typ: 'at+jwt' })),
      OK,
    ],
    [
      'header typ "application/at+jwt"',
      () => bearer(token(full, 'acme', { typ: 'application/at+jwt' })),
      OK,
    ],
    ['header typ "JWT"', () => bearer(token(full, 'acme', { typ: 'JWT' })), INVALID_TOKEN],
    ['no header typ', () => bearer(token(full, 'acme', { typ: undefined })), INVALID_TOKEN],
    [
      'header typ "at+jwt" but no client_id',
      () => bearer(token({ ...full, client_id: undefined }, 'acme', { typ: 'at+jwt' })),
      INVALID_TOKEN,
    ],
    [
      'header typ "at+jwt" but no jti',
      () => bearer(token({ ...full, jti: undefined }, 'acme', { typ: 'at+jwt' })),
      INVALID_TOKEN,
    ],
    [
      'header typ "at+jwt" but no sub',
      () => bearer(token({ ...full, sub: undefined }, 'acme', { typ: 'at+jwt' })),
      INVALID_TOKEN,
    ],
    [
      'header typ "at+jwt" but no iat',
      () => bearer(token({ ...full, iat: undefined }, 'acme', { typ: 'at+jwt' })),
      INVALID_TOKEN,
    ],
    [
      'header typ "at+jwt" on a refresh token',
      () => bearer(token({ ...full, typ: 'Refresh' }, 'acme', { typ: 'at+jwt' })),
      INVALID_TOKEN,
    ],
  ]

  it.each(cases)('%s', async (_name, probe, expected) => {
    await apps.expectAll(await probe(), expected)
  })
})

describe('with required claims', () => {
  const apps = useApps(() => options({ requiredClaims: ['sub', 'tenant'] }))

  const cases: Case[] = [
    ['every required claim present', () => bearer(token({ tenant: 'acme' })), OK],
    ['a required claim missing', () => bearer(token({})), INVALID_TOKEN],
    ['a required claim null', () => bearer(token({ tenant: null })), INVALID_TOKEN],
    ['a required claim empty (missing)', () => bearer(token({ tenant: '' })), INVALID_TOKEN],
  ]

  it.each(cases)('%s', async (_name, probe, expected) => {
    await apps.expectAll(await probe(), expected)
  })
})

/** Claims with none of the Keycloak defaults `accessClaims` adds (typ, scope, azp, jti). */
const bare = { typ: undefined, scope: undefined, azp: undefined, jti: undefined }

describe('ID tokens against a service whose audience is an OIDC client id (access profile)', () => {
  const apps = useApps(() => options({ audience: 'office-web' }))
  const S = Math.floor(Date.now() / 1000)
  const idToken = { ...bare, aud: 'office-web', auth_time: S - 60, sid: 'session-1' }
  const noTyp = { typ: undefined }

  const cases: Case[] = [
    [
      'an ID token without any typ (nonce, at_hash, auth_time, sid)',
      () =>
        bearer(
          token({ ...idToken, nonce: 'n-1', at_hash: 'x0s2XhA-7o6ZBGJrsbTxzQ' }, 'acme', noTyp),
        ),
      INVALID_TOKEN,
    ],
    [
      'an ID token from a refresh grant: at_hash, no nonce',
      () =>
        bearer(
          token(
            { ...idToken, auth_time: undefined, at_hash: 'x0s2XhA-7o6ZBGJrsbTxzQ' },
            'acme',
            noTyp,
          ),
        ),
      INVALID_TOKEN,
    ],
    [
      'an ID token with only nonce',
      () => bearer(token({ ...idToken, auth_time: undefined, nonce: 'n-1' }, 'acme', noTyp)),
      INVALID_TOKEN,
    ],
    ['an ID token with only auth_time', () => bearer(token(idToken, 'acme', noTyp)), INVALID_TOKEN],
    [
      'an ID token of the hybrid flow (c_hash, s_hash)',
      () =>
        bearer(token({ ...idToken, c_hash: 'LDktKdoQak3Pk0cnXxCltA', s_hash: 'a' }, 'acme', noTyp)),
      INVALID_TOKEN,
    ],
    [
      'an ID token with header typ "JWT" and azp',
      () =>
        bearer(
          token({ ...idToken, azp: 'office-web', at_hash: 'x0s2XhA' }, 'acme', { typ: 'JWT' }),
        ),
      INVALID_TOKEN,
    ],
    [
      'a Keycloak ID token (payload typ "ID")',
      () => bearer(token({ aud: 'office-web', typ: 'ID', nonce: 'n-1', scope: undefined })),
      INVALID_TOKEN,
    ],
    [
      'a Keycloak access token (payload typ "Bearer", azp, scope, nonce and auth_time of the sign-in)',
      () => bearer(token({ aud: 'office-web', nonce: 'n-1', auth_time: S - 60, sid: 's-1' })),
      OK,
    ],
    [
      'an RFC 9068 access token (header typ at+jwt, client_id, auth_time)',
      () =>
        bearer(
          token({ ...bare, aud: 'office-web', client_id: 'c', jti: 'j', auth_time: S }, 'acme', {
            typ: 'at+jwt',
          }),
        ),
      OK,
    ],
    [
      'an access token with scp as an array and no typ (Okta, Azure AD)',
      () =>
        bearer(
          token({ ...bare, aud: 'office-web', scp: ['records:read'], cid: 'c' }, 'acme', noTyp),
        ),
      OK,
    ],
    [
      'an access token with scope and azp and no typ (Auth0)',
      () =>
        bearer(
          token({ ...bare, aud: 'office-web', scope: 'read', azp: 'c', gty: 'client-credentials' }),
        ),
      OK,
    ],
    [
      'an app-only access token with roles and no scope (Azure AD)',
      () =>
        bearer(
          token({ ...bare, aud: 'office-web', roles: ['Records.Read'], appid: 'c' }, 'acme', noTyp),
        ),
      OK,
    ],
  ]

  it.each(cases)('%s', async (_name, probe, expected) => {
    await apps.expectAll(await probe(), expected)
  })
})

describe('with the keycloak profile', () => {
  const apps = useApps(() => options({ tokenProfile: 'keycloak' }))

  const cases: Case[] = [
    ['a Keycloak access token (typ "Bearer", azp)', () => bearer(token({})), OK],
    ['no payload typ', () => bearer(token({ typ: undefined })), INVALID_TOKEN],
    ['payload typ "Bearer" but no azp', () => bearer(token({ azp: undefined })), INVALID_TOKEN],
    ['an empty azp', () => bearer(token({ azp: '' })), INVALID_TOKEN],
    [
      'an RFC 9068 token without Keycloak typ',
      () => bearer(token({ typ: undefined, client_id: 'c' }, 'acme', { typ: 'at+jwt' })),
      INVALID_TOKEN,
    ],
    ['a Keycloak ID token', () => bearer(token({ typ: 'ID' })), INVALID_TOKEN],
  ]

  it.each(cases)('%s', async (_name, probe, expected) => {
    await apps.expectAll(await probe(), expected)
  })
})

describe('with allowedClientIds', () => {
  const apps = useApps(() => options({ allowedClientIds: ['office-web', 'billing-sync'] }))

  const cases: Case[] = [
    ['azp allowed', () => bearer(token({ azp: 'office-web' })), OK],
    ['azp not allowed', () => bearer(token({ azp: 'desk-web' })), INVALID_TOKEN],
    [
      'no azp, client_id allowed',
      () => bearer(token({ azp: undefined, client_id: 'billing-sync' })),
      OK,
    ],
    ['neither azp nor client_id', () => bearer(token({ azp: undefined })), INVALID_TOKEN],
    [
      'azp not allowed, client_id allowed (azp decides)',
      () => bearer(token({ azp: 'desk-web', client_id: 'billing-sync' })),
      INVALID_TOKEN,
    ],
    ['azp differing only in case', () => bearer(token({ azp: 'Office-Web' })), INVALID_TOKEN],
  ]

  it.each(cases)('%s', async (_name, probe, expected) => {
    await apps.expectAll(await probe(), expected)
  })
})

describe('empty and mistyped identifier and scope claims (access profile)', () => {
  const apps = useApps(() => options())

  const cases: Case[] = [
    ['sub empty', () => bearer(token({ sub: '' })), INVALID_TOKEN],
    ['sub a number', () => bearer(token({ sub: 42 })), INVALID_TOKEN],
    ['azp empty', () => bearer(token({ azp: '' })), INVALID_TOKEN],
    ['client_id empty', () => bearer(token({ client_id: '' })), INVALID_TOKEN],
    ['jti empty', () => bearer(token({ jti: '' })), INVALID_TOKEN],
    ['jti a number', () => bearer(token({ jti: 7 })), INVALID_TOKEN],
    ['no sub at all (client credentials)', () => bearer(token({ sub: undefined })), OK],
    ['scope as an array', () => bearer(token({ scope: ['openid', 'profile'] })), INVALID_TOKEN],
    ['scope as a number', () => bearer(token({ scope: 1 })), INVALID_TOKEN],
    ['scope empty (no scopes granted)', () => bearer(token({ scope: '' })), OK],
    ['scp as an array', () => bearer(token({ scope: undefined, scp: ['a', 'b'] })), OK],
    ['scp as a string', () => bearer(token({ scope: undefined, scp: 'a b' })), OK],
  ]

  it.each(cases)('%s', async (_name, probe, expected) => {
    await apps.expectAll(await probe(), expected)
  })
})

describe('token lifetime', () => {
  const S = Math.floor(Date.now() / 1000)
  const DAY = 86_400

  describe('with maxTokenLifetimeSeconds: 3600', () => {
    const apps = useApps(() => options({ maxTokenLifetimeSeconds: 3600 }))
    const cases: Case[] = [
      ['a lifetime of 300 s', () => bearer(token({ iat: S, exp: S + 300 })), OK],
      ['a lifetime of exactly 3600 s', () => bearer(token({ iat: S, exp: S + 3600 })), OK],
      ['a lifetime of 3601 s', () => bearer(token({ iat: S, exp: S + 3601 })), INVALID_TOKEN],
      ['exp 400 days ahead', () => bearer(token({ iat: S, exp: S + 400 * DAY })), INVALID_TOKEN],
      ['exp 10^300 s ahead', () => bearer(token({ iat: S, exp: 1e300 })), INVALID_TOKEN],
      ['no iat to measure it by', () => bearer(token({ iat: undefined })), INVALID_TOKEN],
    ]
    it.each(cases)('%s', async (_name, probe, expected) => {
      await apps.expectAll(await probe(), expected)
    })
  })

  describe('without it (the default)', () => {
    const apps = useApps(() => options())
    it('admits a token whose exp is 400 days ahead', async () => {
      await apps.expectAll(bearer(token({ iat: S, exp: S + 400 * DAY })), OK)
    })
  })
})
