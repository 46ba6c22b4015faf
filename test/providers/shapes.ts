/**
 * Token claims laid out as each provider documents them, for `issuer.mint(claims, options)`.
 * The test issuer's Keycloak defaults (`typ`, `azp`, `scope`, `sub`, `jti`, `aud`) are removed
 * unless the provider sets them. Sources: Auth0 "Access Token Profiles" and "Sample Use Cases:
 * Scopes and Claims"; Okta "Validate access tokens" and "Tokens: access token"; Microsoft
 * identity platform "Access token claims reference" and "ID token claims reference"; Amazon
 * Cognito "Understanding the access token" and "Understanding the identity (ID) token".
 */
const NO_KIT_DEFAULTS = {
  aud: undefined,
  sub: undefined,
  azp: undefined,
  typ: undefined,
  scope: undefined,
  jti: undefined,
}

/** Okta, Entra and Cognito headers: `kid` and `alg` (Entra adds `typ: JWT`, the kit's default). */
export const NO_TYP = { header: { typ: undefined } } as const

export const AUTH0 = {
  domain: 'acme.eu.auth0.com',
  issuer: 'https://acme.eu.auth0.com/',
  api: 'https://api.acme.example',
  client: 'Xq3Wk9dPmX2bL1vR7tYc',
}

/** An Auth0 access token for a user, with the userinfo audience and RBAC permissions. */
export function auth0UserToken(extra: Record<string, unknown> = {}) {
  return {
    ...NO_KIT_DEFAULTS,
    iss: AUTH0.issuer,
    sub: 'auth0|64f0c1d2e3a4b5c6d7e8f901',
    aud: [AUTH0.api, `${AUTH0.issuer}userinfo`],
    azp: AUTH0.client,
    scope: 'openid profile email',
    permissions: ['read:messages', 'write:messages'],
    ...extra,
  }
}

/** An Auth0 machine-to-machine token (client credentials grant). */
export function auth0MachineToken(extra: Record<string, unknown> = {}) {
  return {
    ...NO_KIT_DEFAULTS,
    iss: AUTH0.issuer,
    sub: `${AUTH0.client}@clients`,
    aud: AUTH0.api,
    azp: AUTH0.client,
    scope: 'read:messages',
    gty: 'client-credentials',
    permissions: ['read:messages'],
    ...extra,
  }
}

/** An Auth0 ID token: `aud` is the application's client id, with `nonce` and `sid`. */
export function auth0IdToken() {
  return {
    ...NO_KIT_DEFAULTS,
    iss: AUTH0.issuer,
    sub: 'auth0|64f0c1d2e3a4b5c6d7e8f901',
    aud: AUTH0.client,
    nonce: 'n-0S6_WzA2Mj',
    sid: 'sid-1',
    name: 'Ada',
  }
}

export const OKTA = {
  domain: 'acme.okta.com',
  issuer: 'https://acme.okta.com/oauth2/default',
  client: '0oa1b2c3d4e5f6g7h8i9',
}

/** An Okta access token of the default custom authorization server: `cid`, `uid`, `scp` array. */
export function oktaAccessToken(extra: Record<string, unknown> = {}) {
  const now = Math.floor(Date.now() / 1000)
  return {
    ...NO_KIT_DEFAULTS,
    ver: 1,
    jti: 'AT.q6yX3dGZ8rfmdF3bLbEB-Ec1v7vFgXvJ0qB1c2d3e4f',
    iss: OKTA.issuer,
    aud: 'api://default',
    cid: OKTA.client,
    uid: '00u1a2b3c4d5e6f7g8h9',
    scp: ['openid', 'orders:read'],
    auth_time: now - 60,
    sub: 'ada@acme.example',
    ...extra,
  }
}

/** An Okta ID token: `aud` the client id, `jti` `ID.…`, `nonce`, `at_hash`. */
export function oktaIdToken() {
  return {
    ...NO_KIT_DEFAULTS,
    ver: 1,
    jti: 'ID.4eAWJOCMB3SX8XewDfVR',
    iss: OKTA.issuer,
    aud: OKTA.client,
    sub: '00u1a2b3c4d5e6f7g8h9',
    nonce: 'n-0S6_WzA2Mj',
    at_hash: 'MTIzNDU2Nzg5MDEyMzQ1Ng',
    amr: ['pwd'],
    idp: '00o1a2b3c4d5e6f7g8h9',
  }
}

export const ENTRA = {
  tenant: '72f988bf-86f1-41af-91ab-2d7cd011db47',
  customer: 'c4f2a6a1-0b7e-4d52-9a8c-2f5c9d8e1b3a',
  stranger: '9d3e1f7a-5b2c-4e8d-a6f0-1c2b3d4e5f60',
  api: '6e74172b-be56-4843-9ff4-e66a39bb12e3',
  appIdUri: 'api://6e74172b-be56-4843-9ff4-e66a39bb12e3',
  client: 'b7a2e1c9-3d4f-4a5b-8c6d-7e8f9a0b1c2d',
}

/** An Entra ID v2.0 delegated access token: `scp` a space-separated string, `tid`, `azp`. */
export function entraV2UserToken(tenant = ENTRA.tenant, extra: Record<string, unknown> = {}) {
  const now = Math.floor(Date.now() / 1000)
  return {
    ...NO_KIT_DEFAULTS,
    aud: ENTRA.api,
    iss: `https://login.microsoftonline.com/${tenant}/v2.0`,
    nbf: now,
    aio: 'AWQAm/8TAAAA',
    azp: ENTRA.client,
    azpacr: '0',
    name: 'Ada Lovelace',
    oid: '690222be-ff1a-4d56-abd1-7e4f7d38e474',
    preferred_username: 'ada@contoso.example',
    rh: '0.ARoAv4j5cvGGr0GRqy180BHbR.',
    scp: 'access_as_user Tasks.Read',
    sub: 'AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ',
    tid: tenant,
    uti: 'fqiBqXLPj0eQa82S-IYFAA',
    ver: '2.0',
    ...extra,
  }
}

/** An Entra ID v2.0 app-only token (client credentials): app permissions in `roles`, no `scp`. */
export function entraV2AppToken(tenant = ENTRA.tenant) {
  return {
    ...NO_KIT_DEFAULTS,
    aud: ENTRA.api,
    iss: `https://login.microsoftonline.com/${tenant}/v2.0`,
    azp: ENTRA.client,
    azpacr: '1',
    idtyp: 'app',
    oid: 'a1b2c3d4-0000-4000-8000-000000000001',
    roles: ['Tasks.Read.All'],
    sub: 'a1b2c3d4-0000-4000-8000-000000000001',
    tid: tenant,
    ver: '2.0',
  }
}

/** An Entra ID v1.0 access token: `iss` `https://sts.windows.net/{tid}/`, `appid`, App ID URI `aud`. */
export function entraV1UserToken(tenant = ENTRA.tenant) {
  return {
    ...NO_KIT_DEFAULTS,
    aud: ENTRA.appIdUri,
    iss: `https://sts.windows.net/${tenant}/`,
    appid: ENTRA.client,
    appidacr: '0',
    scp: 'access_as_user',
    oid: '690222be-ff1a-4d56-abd1-7e4f7d38e474',
    sub: 'l3_roISQU222bULS9yi2k0XpqpOiMz5H3ZACo1GeXA',
    tid: tenant,
    ver: '1.0',
  }
}

/** An Entra ID v2.0 ID token of the same app registration: `aud` the app's id, `nonce`, no `scp`. */
export function entraV2IdToken(tenant = ENTRA.tenant) {
  return {
    ...NO_KIT_DEFAULTS,
    aud: ENTRA.api,
    iss: `https://login.microsoftonline.com/${tenant}/v2.0`,
    nonce: '123523',
    name: 'Ada Lovelace',
    oid: '690222be-ff1a-4d56-abd1-7e4f7d38e474',
    preferred_username: 'ada@contoso.example',
    rh: 'I',
    sub: 'AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ',
    tid: tenant,
    uti: 'AbC',
    ver: '2.0',
  }
}

export const COGNITO = {
  region: 'eu-west-1',
  userPoolId: 'eu-west-1_AbCdEf123',
  issuer: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf123',
  client: '4jf0d1g2h3i4j5k6l7m8n9o0p1',
  otherClient: '7zz9y8x7w6v5u4t3s2r1q0p9o8',
}

/** A Cognito user access token: no `aud`, `client_id`, `token_use: access`, `cognito:groups`. */
export function cognitoAccessToken(extra: Record<string, unknown> = {}) {
  const now = Math.floor(Date.now() / 1000)
  return {
    ...NO_KIT_DEFAULTS,
    sub: 'aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee',
    'cognito:groups': ['admins'],
    iss: COGNITO.issuer,
    version: 2,
    client_id: COGNITO.client,
    origin_jti: 'aaaaaaaa-0000-4000-8000-000000000000',
    event_id: 'cccccccc-0000-4000-8000-000000000000',
    token_use: 'access',
    scope: 'aws.cognito.signin.user.admin openid orders/read',
    auth_time: now - 60,
    jti: 'dddddddd-0000-4000-8000-000000000000',
    username: 'ada',
    ...extra,
  }
}

/** A Cognito ID token: `aud` the app client id, `token_use: id`. */
export function cognitoIdToken(extra: Record<string, unknown> = {}) {
  const now = Math.floor(Date.now() / 1000)
  return {
    ...NO_KIT_DEFAULTS,
    sub: 'aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee',
    'cognito:groups': ['admins'],
    email_verified: true,
    iss: COGNITO.issuer,
    'cognito:username': 'ada',
    origin_jti: 'aaaaaaaa-0000-4000-8000-000000000000',
    aud: COGNITO.client,
    event_id: 'cccccccc-0000-4000-8000-000000000000',
    token_use: 'id',
    auth_time: now - 60,
    jti: 'eeeeeeee-0000-4000-8000-000000000000',
    email: 'ada@acme.example',
    ...extra,
  }
}
