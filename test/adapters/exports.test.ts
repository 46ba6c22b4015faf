/**
 * What each entry point exports, name by name, types included: the lists below are the package's
 * surface, so adding or dropping a name is a visible decision, made here. An adapter entry point
 * exports its own names and the provider helpers its samples call beside `tollgate()`; everything
 * else of the core (`createGate`, the option and event types, the errors) comes from `tollgate`.
 * The core's guard functions (`requireScopes` …) are the core's only: exported beside the
 * middleware they were mounted as route middleware, as 0.1 and every peer library teach, and
 * answered 500 with nothing at start-up.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

import express from 'express'
import Koa from 'koa'
import request from 'supertest'
import ts from 'typescript'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import * as expressAdapter from '../../adapters/express/index.js'
import * as fastifyAdapter from '../../adapters/fastify/index.js'
import * as fetchAdapter from '../../adapters/fetch/index.js'
import * as honoAdapter from '../../adapters/hono/index.js'
import * as koaAdapter from '../../adapters/koa/index.js'
import * as nestAdapter from '../../adapters/nestjs/index.js'
import { documentedImports, exportedEntries, specifierOf } from '../../scripts/check-consumers.js'
import * as client from '../../src/client/index.js'
import * as errorsModule from '../../src/errors.js'
import * as core from '../../src/index.js'
import * as otel from '../../src/otel/index.js'
import * as signin from '../../src/signin/index.js'
import * as testing from '../../src/testing/index.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'

const ROOT = resolve(import.meta.dirname, '../..')

/** The helpers that build `issuers`, on every adapter entry point beside its factory. */
const PROVIDERS = ['auth0', 'cognito', 'entra', 'keycloak', 'okta']

interface Surface {
  readonly values: readonly string[]
  readonly types: readonly string[]
}

/** Every entry point's names: values (what exists at run time) and types (type-only names). */
const SURFACES: Readonly<Record<string, Surface>> = {
  tollgate: {
    values: [
      ...PROVIDERS,
      'StreamManagementError',
      'TollgateError',
      'createGate',
      'createSignalPoller',
      'createSignalReceiver',
      'createSignalStreams',
      'createMcpPolicy',
      'decodeMcpName',
      'errors',
      'isTollgateError',
      'renderError',
      'renderMcpError',
      'requireAcr',
      'requireAnyScope',
      'requireClientRoles',
      'requireRealmRoles',
      'requireRecentSignIn',
      'requireScopes',
    ],
    types: [
      'Actor',
      'Admission',
      'AllowedActor',
      'Auth0Options',
      'CacheOptions',
      'CallbackRequest',
      'CallbackResponse',
      'CheckResult',
      'ClaimMapping',
      'CognitoOptions',
      'DecisionFacts',
      'DelegationOptions',
      'DpopMode',
      'DpopNonceOptions',
      'DpopOptions',
      'DpopRedisClientLike',
      'DpopReplayOptions',
      'EntraOptions',
      'ErrorResponse',
      'FlexibleLimiterFactory',
      'FlexibleLimiterLike',
      'FlexibleWindow',
      'Gate',
      'GateEvent',
      'GateEventListener',
      'GateOptions',
      'Guard',
      'HeadersLike',
      'IntrospectionBudgetOptions',
      'IntrospectionCacheOptions',
      'IntrospectionClientAuth',
      'IntrospectionFailureReason',
      'IntrospectionOptions',
      'IntrospectionStatus',
      'IssuerIntrospection',
      'IssuerKeysStatus',
      'IssuerOptions',
      'JWKSFailureReason',
      'JWKSOptions',
      'JWSAlgorithm',
      'KeycloakOptions',
      'LogoutRefusalReason',
      'McpAuthorized',
      'McpOperation',
      'McpPolicy',
      'McpPolicyOptions',
      'McpRateLimitOptions',
      'McpResourceRule',
      'McpRule',
      'McpToolRule',
      'MtlsMode',
      'MtlsOptions',
      'OktaOptions',
      'PeerSocket',
      'RateLimitCost',
      'RateLimitHeaderMode',
      'RateLimitOptions',
      'RateLimitWindow',
      'ReadyReport',
      'RedisClientLike',
      'RequestLike',
      'ResourceMetadataOptions',
      'RevocationCallbackOptions',
      'RevocationEvent',
      'RevocationKind',
      'RevocationLoader',
      'RevocationOptions',
      'RevocationReceipt',
      'RevocationRedisClient',
      'RevocationSource',
      'RevocationStorage',
      'RevocationStoreFailurePolicy',
      'RevocationTarget',
      'RevocationUnsyncedPolicy',
      'RevokeOptions',
      'SetErrorCode',
      'SetOutcome',
      'SharedStore',
      'SignalChange',
      'SignalDelivery',
      'SignalEndpoint',
      'SignalEvent',
      'SignalPoller',
      'SignalPollerOptions',
      'SignalReceiver',
      'SignalReceiverOptions',
      'SignalRedisClient',
      'SignalRefusalReason',
      'SignalStreamState',
      'SignalStreams',
      'SignalStreamsOptions',
      'StreamConfiguration',
      'StreamDelivery',
      'StoreFailurePolicy',
      'SubjectClaims',
      'TenantDecision',
      'TenantFunction',
      'TenantOptions',
      'TenantPolicy',
      'TokenCheck',
      'TokenClaims',
      'TokenForTarget',
      'TokenHeader',
      'TokenRoles',
      'VerifiedToken',
    ],
  },
  'tollgate/express': {
    values: [...PROVIDERS, 'mcpGate', 'signIn', 'tollgate'],
    types: ['SignInMiddleware', 'TollgateMiddleware'],
  },
  'tollgate/koa': {
    values: [...PROVIDERS, 'mcpGate', 'signIn', 'tollgate'],
    types: ['McpState', 'SignInMiddleware', 'SignInState', 'TollgateMiddleware', 'TollgateState'],
  },
  'tollgate/fastify': {
    values: [...PROVIDERS, 'mcpGate', 'signIn', 'tollgate'],
    types: ['SignInHook', 'SignInPlugin', 'TollgateHook', 'TollgatePlugin'],
  },
  'tollgate/hono': {
    values: [...PROVIDERS, 'mcpGate', 'signIn', 'tollgate'],
    types: [
      'HonoMcpAuthorized',
      'McpEnv',
      'SignInEnv',
      'SignInMiddleware',
      'TollgateEnv',
      'TollgateMiddleware',
    ],
  },
  'tollgate/fetch': {
    values: [...PROVIDERS, 'mcpGate', 'signIn', 'tollgate'],
    types: [
      'Admitted',
      'Answered',
      'AuthHandler',
      'FetchGuard',
      'FetchHandler',
      'FetchMcpAuthorized',
      'FetchSignIn',
      'FetchTollgate',
      'HandleOptions',
      'McpHandler',
      'McpWrapper',
      'SignInAnswered',
      'SignInHandleOptions',
      'SignInHandler',
      'SignedIn',
      'WithAuthOptions',
      'WithSignInOptions',
    ],
  },
  'tollgate/nestjs': {
    values: [
      ...PROVIDERS,
      'Auth',
      'Mcp',
      'McpGate',
      'Public',
      'RequireAcr',
      'RequireAnyScope',
      'RequireClientRoles',
      'RequireRealmRoles',
      'RequireRecentSignIn',
      'RequireScopes',
      'TOLLGATE_GATE',
      'TollgateExceptionFilter',
      'TollgateGuard',
      'TollgateModule',
      'TollgateRefusal',
    ],
    // `Admission`, `Gate` and `McpAuthorized` are the core's, here too: Nest's parameter
    // decorators and injection tokens carry no type, so every controller spells them out
    // (`@Auth() auth: Admission`, `@Mcp() mcp: McpAuthorized`).
    types: [
      'Admission',
      'Gate',
      'McpAuthorized',
      'TollgateCallbackPaths',
      'TollgateModuleOptions',
      'TollgateSignalsEndpoint',
    ],
  },
  'tollgate/testing': {
    values: [
      'SSF_EVENTS',
      'TEST_ALGORITHMS',
      'createDevProvider',
      'createDpopKey',
      'createTestIssuer',
      'createTestTransmitter',
    ],
    types: [
      'DevAccessTokenOptions',
      'DevClient',
      'DevClientAuth',
      'DevExchangePolicy',
      'DevGrantType',
      'DevProvider',
      'DevProviderOptions',
      'DevResource',
      'DevUser',
      'DpopProofOptions',
      'FaultEndpoint',
      'MintOptions',
      'SetFaultOptions',
      'TestAlgorithm',
      'TestClient',
      'TestDpopKey',
      'TestIssuer',
      'TestIssuerFault',
      'TestIssuerOptions',
      'TestPathIssuer',
      'TestPrivateKey',
      'TestStatusList',
      'TestStatusListOptions',
      'TestSet',
      'TestSetOverrides',
      'TestTransmitter',
      'TestTransmitterDelivery',
      'TestTransmitterOptions',
    ],
  },
  'tollgate/client': {
    values: [
      'StepUpRequiredError',
      'TokenSourceError',
      'createAuthorizedFetch',
      'createTokenExchange',
      'createTokenSource',
      'fromEnv',
      'isStepUpRequired',
      'isTokenSourceError',
      'keycloak',
      'stepUpChallengeOf',
    ],
    types: [
      'AuthorizedFetchOptions',
      'ClientAuthMethod',
      'EnvReference',
      'ExchangeFacts',
      'ExchangeProfile',
      'ExchangeTarget',
      'GrantType',
      'IssuerOptions',
      'KeycloakOptions',
      'PrivateKeyInput',
      'RenewalOptions',
      'RetryOptions',
      'SecretInput',
      'SharedCacheOptions',
      'StepUpReason',
      'TokenParameters',
      'TokenExchange',
      'TokenExchangeEvent',
      'TokenExchangeOptions',
      'TokenRequestFacts',
      'TokenSource',
      'TokenSourceErrorCode',
      'TokenSourceEvent',
      'TokenSourceEventListener',
      'TokenSourceOptions',
    ],
  },
  'tollgate/signin': {
    values: [
      'SignInError',
      'createMemorySessionStore',
      'createRedisSessionStore',
      'createSignIn',
      'fromEnv',
      'isSignInError',
      'keycloak',
    ],
    types: [
      'EnvReference',
      'IssuerOptions',
      'KeycloakOptions',
      'MemorySessionStore',
      'MemorySessionStoreOptions',
      'ProviderErrorWords',
      'RedisSessionStoreOptions',
      'RefreshRefusal',
      'SecretInput',
      'SessionEndReason',
      'SessionOptions',
      'SessionRefreshOptions',
      'SessionStore',
      'SignIn',
      'SignInContext',
      'SignInErrorCode',
      'SignInEvent',
      'SignInEventListener',
      'SignInKey',
      'SignInOptions',
      'SignInOutcome',
      'SignInRefusalReason',
      'SignInRequest',
      'SignInResponse',
      'SignInRoutes',
      'SignedInUser',
      'StepUpOptions',
      'TokenParameters',
    ],
  },
  'tollgate/otel': {
    values: ['createOtelListener', 'createSignInOtelListener', 'createTokenSourceOtelListener'],
    types: ['OtelOptions', 'SignInOtelOptions', 'TokenSourceOtelOptions'],
  },
}

/** `errors` of `tollgate`: every error class, and the types of their codes. */
const ERRORS: Surface = {
  values: [
    'ActorRefusedError',
    'CostExceedsLimitError',
    'DpopNonceError',
    'InsufficientScopeError',
    'InsufficientUserAuthenticationError',
    'InvalidDpopProofError',
    'InvalidRequestError',
    'InvalidTokenError',
    'LimiterStoreError',
    'McpRequestError',
    'RateLimitedError',
    'ServiceUnavailableError',
    'TenantRefusedError',
    'TokenExpiredError',
    'TokenMissingError',
    'TollgateError',
  ],
  types: [
    'AnyTollgateError',
    'DpopErrorCode',
    'ErrorBodyCode',
    'ErrorOptions',
    'InvalidTokenCode',
    'LimiterStoreErrorCode',
    'McpErrorCode',
    'RefusalReason',
    'TollgateErrorCode',
    'UnavailableCode',
  ],
}

/** Each entry point's module as code imports it. */
const MODULES: Readonly<Record<string, Record<string, unknown>>> = {
  tollgate: core,
  'tollgate/express': expressAdapter,
  'tollgate/koa': koaAdapter,
  'tollgate/fastify': fastifyAdapter,
  'tollgate/hono': honoAdapter,
  'tollgate/fetch': fetchAdapter,
  'tollgate/nestjs': nestAdapter,
  'tollgate/testing': testing,
  'tollgate/client': client,
  'tollgate/signin': signin,
  'tollgate/otel': otel,
}
const ADAPTERS = Object.keys(MODULES).filter((name) =>
  /^tollgate\/(express|koa|fastify|hono|fetch|nestjs)$/.test(name),
)
const GUARD_NAMES = [
  'requireScopes',
  'requireAnyScope',
  'requireRealmRoles',
  'requireClientRoles',
  'requireAcr',
  'requireRecentSignIn',
]

/** The source file of each `tollgate/*` specifier, as tsconfig.json maps it for the samples. */
function entryFiles(): Record<string, string> {
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile).config as {
    compilerOptions: { paths: Record<string, [string]> }
  }
  return Object.fromEntries(
    Object.entries(config.compilerOptions.paths).map(([name, [path]]) => [name, join(ROOT, path)]),
  )
}

/** The names a module exports as the compiler sees them, values apart from type-only names. */
function surfacesOf(files: Readonly<Record<string, string>>): Record<string, Surface> {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'))
      },
    },
  )
  if (!parsed) throw new Error('tsconfig.json could not be read')
  const program = ts.createProgram(Object.values(files), { ...parsed.options, noEmit: true })
  const checker = program.getTypeChecker()
  const surfaces: Record<string, Surface> = {}
  for (const [name, file] of Object.entries(files)) {
    const source = program.getSourceFile(file)
    const module = source && checker.getSymbolAtLocation(source)
    if (!module) throw new Error(`${file} is not a module`)
    const values: string[] = []
    const types: string[] = []
    for (const symbol of checker.getExportsOfModule(module)) {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
      // `export type { x }` is a type-only name even when x is a value.
      const typeOnly = (symbol.declarations ?? []).some(ts.isTypeOnlyImportOrExportDeclaration)
      const isValue = !typeOnly && (target.flags & ts.SymbolFlags.Value) !== 0
      ;(isValue ? values : types).push(symbol.name)
    }
    surfaces[name] = { values: values.sort(), types: types.sort() }
  }
  return surfaces
}

const sorted = ({ values, types }: Surface): Surface => ({
  values: [...values].sort(),
  types: [...types].sort(),
})

describe('the entry points', () => {
  let actual: Record<string, Surface>
  beforeAll(() => {
    const files = entryFiles()
    actual = surfacesOf({ ...files, errors: join(ROOT, 'src/errors-namespace.ts') })
  }, 120_000)

  it('are those of package.json exports, each with its list', () => {
    const entries = exportedEntries().map(specifierOf).sort()
    expect(Object.keys(SURFACES).sort()).toEqual(entries)
    expect(Object.keys(entryFiles()).sort()).toEqual(entries)
  })

  it.each(Object.keys(SURFACES))('%s exports its list, no more, no fewer', (name) => {
    expect(actual[name]).toEqual(sorted(SURFACES[name] as Surface))
  })

  it.each(Object.keys(SURFACES))('%s has at run time the values of its list', (name) => {
    expect(Object.keys(MODULES[name] as object).sort()).toEqual(
      sorted(SURFACES[name] as Surface).values,
    )
  })

  it('errors holds every error class and the types of their codes', () => {
    expect(actual['errors']).toEqual(sorted(ERRORS))
    expect(Object.keys(core.errors).sort()).toEqual(sorted(ERRORS).values)
  })

  it('errors misses no error class of the core', () => {
    const classes = Object.entries(errorsModule)
      .filter(([, value]) => typeof value === 'function' && value.prototype instanceof Error)
      .map(([name]) => name)
    expect(classes.length).toBeGreaterThan(10)
    for (const name of classes) {
      expect((core.errors as Record<string, unknown>)[name], name).toBe(
        (errorsModule as Record<string, unknown>)[name],
      )
    }
    expect(core.errors.TollgateError).toBe(core.TollgateError)
  })

  it.each(ADAPTERS)(
    "%s gives the provider helpers of the core, the core's own functions",
    (name) => {
      const adapter = MODULES[name] as Record<string, unknown>
      for (const helper of PROVIDERS) {
        expect(adapter[helper], helper).toBe((core as Record<string, unknown>)[helper])
      }
    },
  )

  it.each(ADAPTERS)('%s has no name like a guard but the Nest decorators', (name) => {
    const adapter = MODULES[name] as Record<string, unknown>
    const guardLike = Object.keys(adapter).filter((key) => /^require/.test(key))
    expect(guardLike).toEqual([])
    const coreGuards = GUARD_NAMES.map((guard) => (core as Record<string, unknown>)[guard])
    expect(Object.values(adapter).filter((value) => coreGuards.includes(value))).toEqual([])
  })

  it("has every name the README's and the guides' samples import, fragments included", () => {
    const missing: string[] = []
    for (const [specifier, names] of documentedImports()) {
      const surface = SURFACES[specifier]
      for (const { name, typeOnly } of names) {
        const listed = surface?.values.includes(name) || (typeOnly && surface?.types.includes(name))
        if (!listed) missing.push(`${specifier}: ${name}${typeOnly ? ' (type)' : ''}`)
      }
    }
    expect(missing).toEqual([])
  })

  it('has every name the demo imports', () => {
    const missing: string[] = []
    const files = readdirSync(join(ROOT, 'demo')).filter((file) => file.endsWith('.ts'))
    expect(files.length).toBeGreaterThan(0)
    for (const file of files) {
      const code = readFileSync(join(ROOT, 'demo', file), 'utf8')
      const source = ts.createSourceFile(file, code, ts.ScriptTarget.Latest)
      for (const statement of source.statements) {
        if (!ts.isImportDeclaration(statement)) continue
        const specifier = (statement.moduleSpecifier as ts.StringLiteral).text
        if (!/^tollgate(\/|$)/.test(specifier)) continue
        const surface = SURFACES[specifier]
        const bindings = statement.importClause?.namedBindings
        if (bindings === undefined || ts.isNamespaceImport(bindings)) continue
        for (const element of bindings.elements) {
          const name = (element.propertyName ?? element.name).text
          if (!surface?.values.includes(name) && !surface?.types.includes(name)) {
            missing.push(`demo/${file}: ${specifier} ${name}`)
          }
        }
      }
    }
    expect(missing).toEqual([])
  })
})

describe('a guard mounted the 0.1 way', () => {
  let issuer: TestIssuer
  beforeAll(async () => {
    issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  })
  afterAll(async () => {
    await issuer.close()
  })
  const options = () => ({
    issuers: core.keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
  })

  it('fails when the Express app is built, not with a 500 at the first request', () => {
    const { requireScopes } = expressAdapter as Record<string, unknown>
    const app = express()
    app.use(expressAdapter.tollgate(options()))
    expect(() =>
      app.get('/x', (requireScopes as (scope: string) => express.RequestHandler)('a'), (_q, r) => {
        r.end()
      }),
    ).toThrow(TypeError)
  })

  it('fails when the Koa app is built, not with a 500 at the first request', () => {
    const { requireScopes } = koaAdapter as Record<string, unknown>
    const app = new Koa()
    app.use(koaAdapter.tollgate(options()))
    expect(() => app.use((requireScopes as (scope: string) => Koa.Middleware)('a'))).toThrow(
      TypeError,
    )
  })

  it("answers 403 in both frameworks through the middleware's own guard", async () => {
    const token = await issuer.mint({ scope: 'billing:read' })
    const expressAuth = expressAdapter.tollgate(options())
    const expressApp = express()
    expressApp.get('/x', expressAuth, expressAuth.requireScopes('billing:write'), (_req, res) => {
      res.end('ok')
    })
    const koaAuth = koaAdapter.tollgate(options())
    const koaApp = new Koa()
    koaApp.use(koaAuth)
    koaApp.use(koaAuth.requireScopes('billing:write'))
    koaApp.use((ctx) => {
      ctx.body = 'ok'
    })
    for (const server of [expressApp, koaApp.callback()]) {
      const res = await request(server).get('/x').set('Authorization', `Bearer ${token}`)
      expect(res.status).toBe(403)
      expect(res.headers['www-authenticate']).toContain('error="insufficient_scope"')
    }
  })
})
