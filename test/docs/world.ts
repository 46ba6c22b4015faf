/**
 * What the documentation's samples run against: the testing kit on loopback, shaped like the
 * providers the guides name, and the services the samples call. One world serves every sample of
 * a run (samples run concurrently: each gets its own port and its own Redis database).
 *
 * - The test issuer (`createTestIssuer`): Keycloak realm `acme` at `AUTH_URL`, and issuers posing
 *   as each provider a sample names by its real URL (`issuers: [{ name, path, issuer, jwksPath }]`,
 *   docs/testing.md "Tokens shaped like Auth0, Entra, Okta and Cognito"): their tokens carry the
 *   provider's own `iss`, their keys are served at the path the provider's profile builds.
 * - The substitution table ({@link SUBSTITUTIONS}, printed in docs/testing.md): each real origin a
 *   sample names, and where on loopback its requests go (test/docs/fetch-hosts.ts applies it).
 * - The development provider (`createDevProvider`, realm `acme`) for sign-in and the backend-job
 *   clients, whose samples read `AUTH_URL` (an issuer's address is in its tokens and cannot be
 *   substituted under a real provider's name).
 * - The office product's API, `https://office.example.com/api/namespaces`: a stub that answers
 *   with what it was sent, so a scenario can check which token a sample's client sent.
 *
 * @module
 */
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

import {
  createDevProvider,
  createTestIssuer,
  type DevProvider,
  type TestIssuer,
  type TestPathIssuer,
} from 'tollgate/testing'

import { type MemcachedServer, startMemcachedServer } from '../helpers/memcached.js'
import { type PostgresServer, startPostgresServer } from '../helpers/postgres.js'
import { type RedisServer, startRedisServer } from '../helpers/redis.js'
import { AUTH0, COGNITO, ENTRA, OKTA } from '../providers/shapes.js'

export { AUTH0, COGNITO, ENTRA, OKTA }

/** The secrets the samples read from the environment (`fromEnv(…)`), as an operator sets them. */
export const SECRETS = {
  BILLING_SYNC_SECRET: 'billing-sync-secret-for-the-samples',
  OFFICE_WEB_SECRET: 'office-web-secret-for-the-samples',
  // The APIs' own clients at their providers, for introspection (docs/introspection.md, keycloak.md).
  LEDGER_API_SECRET: 'ledger-api-secret-for-the-samples',
  GATEWAY_CLIENT_SECRET: 'gateway-client-secret-for-the-samples',
  // Two keys of 32 bytes, newest first (docs/signin.md "The key ring").
  SIGNIN_KEYS: `2026-11=${Buffer.alloc(32, 7).toString('base64')},2026-05=${Buffer.alloc(32, 5).toString('base64url')}`,
} as const

/**
 * One row of the substitution table: requests a sample sends to `origin` go to the test issuer's
 * `prefix` (`kit`) or to one of the runner's services, path and query kept. `issuers` are the
 * test issuer's entries served under that prefix, posing as the provider.
 */
export interface Substitution {
  readonly origin: string
  readonly to: 'kit' | 'office'
  /** Under the test issuer's URL, for `to: 'kit'`. */
  readonly prefix?: string
  readonly issuers?: readonly TestPathIssuer[]
  /** What answers there, for docs/testing.md. */
  readonly answers: string
}

export const SUBSTITUTIONS: readonly Substitution[] = [
  {
    origin: 'https://sso.example.com',
    to: 'kit',
    prefix: '/sso',
    issuers: [
      {
        name: 'sso',
        path: '/sso/realms/acme',
        issuer: 'https://sso.example.com/realms/acme',
      },
    ],
    answers: 'Keycloak realm `acme` (issuer `https://sso.example.com/realms/acme`)',
  },
  {
    origin: 'https://login.example.com',
    to: 'kit',
    prefix: '/login',
    issuers: [{ name: 'login', path: '/login', issuer: 'https://login.example.com/' }],
    answers: 'an OpenID provider with discovery, issuer `https://login.example.com/`',
  },
  {
    origin: 'https://idp.example.com',
    to: 'kit',
    prefix: '/idp',
    issuers: [
      { name: 'idp', path: '/idp', issuer: 'https://idp.example.com/' },
      { name: 'idp-oidc', path: '/idp/api/oidc', issuer: 'https://idp.example.com/api/oidc' },
    ],
    answers:
      'OpenID providers with discovery, issuers `https://idp.example.com/` and `https://idp.example.com/api/oidc`',
  },
  {
    origin: `https://${AUTH0.domain}`,
    to: 'kit',
    prefix: '/auth0',
    issuers: [
      {
        name: 'auth0',
        path: '/auth0',
        issuer: AUTH0.issuer,
        jwksPath: '.well-known/jwks.json',
        tokenPath: 'oauth/token',
      },
    ],
    answers: `Auth0 tenant \`${AUTH0.domain}\`: keys at \`/.well-known/jwks.json\``,
  },
  {
    origin: `https://${OKTA.domain}`,
    to: 'kit',
    prefix: '/okta',
    issuers: [
      {
        name: 'okta',
        path: '/okta/oauth2/default',
        issuer: OKTA.issuer,
        jwksPath: 'v1/keys',
        tokenPath: 'v1/token',
      },
    ],
    answers: 'Okta authorization server `default`: keys at `/oauth2/default/v1/keys`',
  },
  {
    origin: 'https://login.microsoftonline.com',
    to: 'kit',
    prefix: '/entra',
    issuers: [
      {
        name: 'entra',
        path: `/entra/${ENTRA.tenant}`,
        issuer: `https://login.microsoftonline.com/${ENTRA.tenant}/v2.0`,
        jwksPath: 'discovery/v2.0/keys',
      },
    ],
    answers: `Entra ID tenant \`${ENTRA.tenant}\` (v2.0): keys at \`/{tenant}/discovery/v2.0/keys\``,
  },
  {
    origin: `https://cognito-idp.${COGNITO.region}.amazonaws.com`,
    to: 'kit',
    prefix: '/cognito',
    issuers: [
      {
        name: 'cognito',
        path: `/cognito/${COGNITO.userPoolId}`,
        issuer: COGNITO.issuer,
        jwksPath: '.well-known/jwks.json',
      },
    ],
    answers: `Cognito user pool \`${COGNITO.userPoolId}\`: keys at \`/{userPoolId}/.well-known/jwks.json\``,
  },
  {
    origin: 'https://office.example.com',
    to: 'office',
    answers:
      "the office product's API: `GET /api/namespaces` answers 200 with the claims of the bearer token it was sent, 401 without one",
  },
]

/** A request the office API stub received. */
export interface OfficeCall {
  readonly method: string
  readonly path: string
  /** The payload of the bearer token, decoded (the stub stands for a product: it checks nothing). */
  readonly claims: Record<string, unknown> | undefined
}

/** The office API stub: `GET /api/namespaces`. */
export interface OfficeApi {
  readonly url: string
  readonly calls: OfficeCall[]
  close(): Promise<void>
}

function claimsOf(request: IncomingMessage): Record<string, unknown> | undefined {
  const token = /^Bearer (\S+)$/i.exec(request.headers.authorization ?? '')?.[1]
  const payload = token?.split('.')[1]
  if (payload === undefined) return undefined
  try {
    return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
  } catch {
    return undefined
  }
}

async function startOffice(): Promise<OfficeApi> {
  const calls: OfficeCall[] = []
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?', 1)[0] ?? '/'
    const claims = claimsOf(request)
    calls.push({ method: request.method ?? 'GET', path, claims })
    if (path !== '/api/namespaces') {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}')
      return
    }
    if (claims === undefined) {
      response
        .writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' })
        .end('{"error":"unauthorized"}')
      return
    }
    const caller = {
      aud: claims['aud'],
      azp: claims['azp'],
      sub: claims['sub'],
      scope: claims['scope'],
    }
    response
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ namespaces: ['records'], caller }))
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections()
        server.close(() => done())
      }),
  }
}

/** The users and clients of the development provider the sign-in and client samples use. */
export const DEV_USERS = {
  alice: { sub: 'alice', name: 'Alice Example', email: 'alice@example.com' },
  bob: { sub: 'bob', name: 'Bob Example', email: 'bob@example.com' },
} as const

async function startDevProvider(): Promise<DevProvider> {
  return createDevProvider({
    realm: 'acme',
    users: [
      { ...DEV_USERS.alice, tokenClaims: { tenant: 'acme' } },
      { ...DEV_USERS.bob, tokenClaims: { tenant: 'acme' } },
    ],
    // docs/step-up.md: a sign-in gets the first, or the one its acr_values ask for.
    acrValues: ['urn:example:pwd', 'urn:example:mfa'],
    resources: {
      'https://office.example.com': { audience: 'office', scopes: ['office:records:read'] },
      'https://api.example.com': { audience: 'gateway', scopes: ['billing:read'] },
      // Opaque tokens, checked by introspection (docs/introspection.md).
      'https://ledger.example.com': {
        audience: 'ledger',
        scopes: ['ledger:read'],
        accessTokenFormat: 'opaque',
      },
    },
    clients: [
      {
        clientId: 'office-web',
        clientSecret: SECRETS.OFFICE_WEB_SECRET,
        redirectUris: ['https://office.example.com/auth/callback'],
        postLogoutRedirectUris: ['https://office.example.com/'],
      },
      {
        clientId: 'billing-sync',
        clientSecret: SECRETS.BILLING_SYNC_SECRET,
        scopes: ['office:records:read', 'ledger:read'],
        audiences: ['https://office.example.com', 'https://ledger.example.com'],
      },
      { clientId: 'ledger-api', clientSecret: SECRETS.LEDGER_API_SECRET },
    ],
  })
}

/** Starts `start` once, on first use, and remembers its promise. */
function lazy<T>(start: () => Promise<T>): {
  get(): Promise<T>
  started(): Promise<T> | undefined
} {
  let running: Promise<T> | undefined
  return { get: () => (running ??= start()), started: () => running }
}

export interface SampleWorld {
  /** The test issuer: realm `acme`, and the issuers of {@link SUBSTITUTIONS}. */
  readonly kit: TestIssuer
  readonly redis: RedisServer
  readonly office: OfficeApi
  /** `origin` → loopback base URL: what test/docs/fetch-hosts.ts reads from `TOLLGATE_SAMPLE_HOSTS`. */
  readonly hosts: Readonly<Record<string, string>>
  /** `redis://127.0.0.1:<port>/<db>`, a database no other sample uses. */
  redisUrl(): string
  /** The development provider, started on first use. */
  devProvider(): Promise<DevProvider>
  postgres(): Promise<PostgresServer>
  memcached(): Promise<MemcachedServer>
  close(): Promise<void>
}

/** Redis databases: one per sample that asks, so that no two count in the same keys. */
const DATABASES = 128

export async function startWorld(): Promise<SampleWorld> {
  const issuers = SUBSTITUTIONS.flatMap((row) => row.issuers ?? [])
  const [kit, redis, office] = await Promise.all([
    createTestIssuer({
      realms: ['acme'],
      audience: 'gateway',
      issuers,
      clients: [
        {
          clientId: 'billing-sync',
          clientSecret: SECRETS.BILLING_SYNC_SECRET,
          audience: 'office',
          scope: 'office:records:read',
        },
      ],
    }),
    startRedisServer(['--databases', String(DATABASES)]),
    startOffice(),
  ])
  const hosts: Record<string, string> = {}
  for (const row of SUBSTITUTIONS) {
    hosts[row.origin] = row.to === 'office' ? office.url : `${kit.url}${row.prefix ?? ''}`
  }
  const dev = lazy(startDevProvider)
  const postgres = lazy(startPostgresServer)
  const memcached = lazy(startMemcachedServer)
  let database = 0
  return {
    kit,
    redis,
    office,
    hosts,
    redisUrl() {
      database += 1
      if (database >= DATABASES)
        throw new Error(`more than ${DATABASES - 1} Redis databases asked for`)
      return `redis://127.0.0.1:${redis.port}/${database}`
    },
    devProvider: dev.get,
    postgres: postgres.get,
    memcached: memcached.get,
    async close() {
      await Promise.allSettled([
        kit.close(),
        redis.stop(),
        office.close(),
        dev.started()?.then((provider) => provider.close()),
        postgres.started()?.then((server) => server.stop()),
        memcached.started()?.then((server) => server.stop()),
      ])
    },
  }
}
