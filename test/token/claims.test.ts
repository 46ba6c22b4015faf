import { describe, expect, it } from 'vitest'
import { InvalidTokenError, TokenExpiredError } from '../../src/errors.js'
import {
  type ClaimRules,
  checkClaims,
  createClaimReaders,
  DEFAULT_READERS,
  readRoles,
  readScopes,
} from '../../src/token/claims.js'
import type { TokenClaims, TokenHeader } from '../../src/types.js'

const NOW_MS = 1_700_000_000_000
const NOW = NOW_MS / 1000
const RULES: ClaimRules = {
  audiences: new Set(['gateway']),
  clockToleranceSeconds: 5,
  maxTokenAgeSeconds: undefined,
  maxTokenLifetimeSeconds: undefined,
  requiredClaims: [],
  tokenProfile: 'access',
  allowedClientIds: undefined,
}
const HEADER: TokenHeader = { alg: 'RS256', typ: 'JWT' }
const claims = (extra: Record<string, unknown> = {}) => ({
  iss: 'https://sso/realms/a',
  aud: 'gateway',
  exp: NOW + 60,
  iat: NOW,
  sub: 'u1',
  typ: 'Bearer',
  ...extra,
})

describe('checkClaims', () => {
  const reasonOf = (run: () => unknown) => {
    try {
      run()
    } catch (error) {
      return (error as InvalidTokenError).reason
    }
    return undefined
  }

  it.each<[string, Record<string, unknown>, Partial<ClaimRules>, string | undefined]>([
    [
      'an ID token with only ID-token claims',
      { typ: undefined, nonce: 'n', at_hash: 'h' },
      {},
      'token_type',
    ],
    ['an ID token with auth_time only', { typ: undefined, auth_time: NOW }, {}, 'token_type'],
    [
      'auth_time on a token with scope',
      { typ: undefined, auth_time: NOW, scope: 'a' },
      {},
      undefined,
    ],
    ['nonce on a Keycloak access token', { nonce: 'n' }, {}, undefined],
    ['keycloak profile without azp', {}, { tokenProfile: 'keycloak' }, 'missing_claim'],
    [
      'keycloak profile without typ',
      { typ: undefined, azp: 'c' },
      { tokenProfile: 'keycloak' },
      'token_type',
    ],
    ['keycloak profile, typ and azp', { azp: 'c' }, { tokenProfile: 'keycloak' }, undefined],
    ['a client not allowed', { azp: 'x' }, { allowedClientIds: new Set(['c']) }, 'client'],
    [
      'a client allowed by client_id',
      { client_id: 'c' },
      { allowedClientIds: new Set(['c']) },
      undefined,
    ],
    ['an empty sub', { sub: '' }, {}, 'malformed_claim'],
    ['an empty jti', { jti: '' }, {}, 'malformed_claim'],
    ['scope as an array', { scope: ['a'] }, {}, 'malformed_claim'],
    [
      'a required claim that is empty',
      { tenant: '' },
      { requiredClaims: ['tenant'] },
      'missing_claim',
    ],
    ['a lifetime over the bound', { exp: NOW + 61 }, { maxTokenLifetimeSeconds: 60 }, 'lifetime'],
    ['a lifetime at the bound', { exp: NOW + 60 }, { maxTokenLifetimeSeconds: 60 }, undefined],
    [
      'a lifetime bound without iat',
      { iat: undefined },
      { maxTokenLifetimeSeconds: 60 },
      'missing_claim',
    ],
    ['a fractional exp (RFC 7519 §2)', { exp: NOW + 60.5 }, {}, undefined],
    ['a fractional iat', { iat: NOW - 5.25 }, {}, undefined],
    ['a fractional nbf', { nbf: NOW - 0.5 }, {}, undefined],
    ['a fractional nbf beyond the tolerance', { nbf: NOW + 5.5 }, {}, 'not_yet_valid'],
    ['an exp beyond 2^53', { exp: 2 ** 60 }, {}, 'malformed_claim'],
    ['an exp of 1e300', { exp: 1e300 }, {}, 'malformed_claim'],
    ['an nbf beyond −2^53', { nbf: -(2 ** 60) }, {}, 'malformed_claim'],
    ['a NaN iat', { iat: Number.NaN }, {}, 'malformed_claim'],
    ['an infinite exp', { exp: Number.POSITIVE_INFINITY }, {}, 'malformed_claim'],
    ['a numeric-string exp', { exp: String(NOW + 60) }, {}, 'malformed_claim'],
  ])('gives the reason for %s', (_, extra, rules, reason) => {
    expect(reasonOf(() => checkClaims(HEADER, claims(extra), { ...RULES, ...rules }, NOW_MS))).toBe(
      reason,
    )
  })

  it('returns when the verdict expires: exp plus tolerance', () => {
    expect(checkClaims(HEADER, claims(), RULES, NOW_MS)).toEqual({
      validFrom: (NOW - 5) * 1000,
      validUntil: (NOW + 65) * 1000,
    })
  })

  it('keeps the fraction of exp, nbf and iat in when the verdict holds', () => {
    expect(
      checkClaims(
        HEADER,
        claims({ exp: NOW + 60.5, nbf: NOW - 0.25, iat: NOW - 1.5 }),
        RULES,
        NOW_MS,
      ),
    ).toEqual({ validFrom: (NOW - 0.25 - 5) * 1000, validUntil: (NOW + 65.5) * 1000 })
  })

  it('stops at the maximum token age when it comes first', () => {
    expect(
      checkClaims(HEADER, claims(), { ...RULES, maxTokenAgeSeconds: 10 }, NOW_MS).validUntil,
    ).toBe((NOW + 15) * 1000)
  })

  it.each([
    ['exp just past the tolerance', { exp: NOW - 5 }],
    ['exp long past', { exp: NOW - 3600 }],
    ['a token older than the maximum age', { iat: NOW - 100 }],
  ])('throws TokenExpiredError for %s', (_, extra) => {
    const rules = { ...RULES, maxTokenAgeSeconds: 60 }
    expect(() => checkClaims(HEADER, claims(extra), rules, NOW_MS)).toThrow(TokenExpiredError)
  })

  it('accepts exp within the tolerance', () => {
    expect(() => checkClaims(HEADER, claims({ exp: NOW - 4 }), RULES, NOW_MS)).not.toThrow()
  })

  it.each([
    ['no exp', { exp: undefined }],
    ['exp as a string', { exp: String(NOW + 60) }],
    ['exp as NaN-like null', { exp: null }],
    ['exp as an array', { exp: [NOW + 60] }],
    ['nbf in the future beyond tolerance', { nbf: NOW + 6 }],
    ['nbf as a string', { nbf: '0' }],
    ['iat in the future beyond tolerance', { iat: NOW + 6 }],
    ['iat as a boolean', { iat: true }],
    ['no aud', { aud: undefined }],
    ['another audience', { aud: 'office' }],
    ['an audience differing in case', { aud: 'Gateway' }],
    ['an empty audience array', { aud: [] }],
    ['an audience array without ours', { aud: ['office', 'desk'] }],
    ['an audience array with a non-string', { aud: ['gateway', 1] }],
    ['an audience object', { aud: { gateway: true } }],
    ['a Keycloak ID token', { typ: 'ID' }],
    ['a Keycloak refresh token', { typ: 'Refresh' }],
    ['a Keycloak logout token', { typ: 'Logout' }],
    ['a payload typ that is not a string', { typ: 1 }],
    [
      'a back-channel logout token',
      { typ: undefined, events: { 'http://schemas.openid.net/event/backchannel-logout': {} } },
    ],
    ['a non-string subject', { sub: 42 }],
    ['a DPoP-bound token (cnf.jkt)', { cnf: { jkt: 'thumbprint' } }],
    ['an mTLS-bound token (cnf.x5t#S256)', { cnf: { 'x5t#S256': 'thumbprint' } }],
  ])('throws invalid_token for %s', (_, extra) => {
    let thrown: unknown
    try {
      checkClaims(HEADER, claims(extra), RULES, NOW_MS)
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(InvalidTokenError)
    expect(thrown).not.toBeInstanceOf(TokenExpiredError)
  })

  it('accepts nbf and iat within the tolerance', () => {
    expect(() =>
      checkClaims(HEADER, claims({ nbf: NOW + 5, iat: NOW + 5 }), RULES, NOW_MS),
    ).not.toThrow()
  })

  it('accepts an audience array containing ours', () => {
    expect(() =>
      checkClaims(HEADER, claims({ aud: ['office', 'gateway'] }), RULES, NOW_MS),
    ).not.toThrow()
  })

  it('accepts a token without payload typ (non-Keycloak providers)', () => {
    expect(() => checkClaims(HEADER, claims({ typ: undefined }), RULES, NOW_MS)).not.toThrow()
  })

  it.each(['JWT', 'jwt', 'at+jwt', 'application/at+jwt', 'AT+JWT'])(
    'accepts header typ %s',
    (typ) => {
      expect(() => checkClaims({ alg: 'RS256', typ }, claims(), RULES, NOW_MS)).not.toThrow()
    },
  )

  it.each(['logout+jwt', 'id_token+jwt', 'dpop+jwt', 'JWE', ''])('refuses header typ %s', (typ) => {
    expect(() => checkClaims({ alg: 'RS256', typ }, claims(), RULES, NOW_MS)).toThrow(
      InvalidTokenError,
    )
  })

  it('requires configured claims to be present and not null', () => {
    const rules = { ...RULES, requiredClaims: ['tenant'] }
    expect(() => checkClaims(HEADER, claims(), rules, NOW_MS)).toThrow(InvalidTokenError)
    expect(() => checkClaims(HEADER, claims({ tenant: null }), rules, NOW_MS)).toThrow(
      InvalidTokenError,
    )
    expect(() => checkClaims(HEADER, claims({ tenant: 'acme' }), rules, NOW_MS)).not.toThrow()
  })

  it('requires at+jwt and the RFC 9068 claims under the rfc9068 profile', () => {
    const rules = { ...RULES, tokenProfile: 'rfc9068' as const }
    const complete = claims({ client_id: 'c', jti: 'j' })
    expect(() =>
      checkClaims({ alg: 'RS256', typ: 'at+jwt' }, complete, rules, NOW_MS),
    ).not.toThrow()
    expect(() => checkClaims({ alg: 'RS256', typ: 'JWT' }, complete, rules, NOW_MS)).toThrow(
      InvalidTokenError,
    )
    expect(() => checkClaims({ alg: 'RS256' }, complete, rules, NOW_MS)).toThrow(InvalidTokenError)
    expect(() => checkClaims({ alg: 'RS256', typ: 'at+jwt' }, claims(), rules, NOW_MS)).toThrow(
      InvalidTokenError,
    )
  })

  it('describes every refusal but expiry the same way', () => {
    const descriptions = new Set<string>()
    for (const extra of [{ aud: 'x' }, { typ: 'ID' }, { nbf: NOW + 100 }, { exp: 'x' }]) {
      try {
        checkClaims(HEADER, claims(extra), RULES, NOW_MS)
      } catch (error) {
        descriptions.add((error as Error).message)
      }
    }
    expect([...descriptions]).toEqual(['invalid token'])
  })
})

describe('readScopes', () => {
  it.each([
    [{ scope: 'openid  profile billing:read' }, ['openid', 'profile', 'billing:read']],
    [{ scp: ['a', 'b', 3] }, ['a', 'b']],
    [{ scp: 'a b' }, ['a', 'b']],
    [{ scope: 'a', scp: ['b'] }, ['a']],
    [{ scope: 12 }, []],
    [{}, []],
  ])('reads %j as %j', (extra, scopes) => {
    expect(readScopes(claims(extra) as TokenClaims)).toEqual(scopes)
  })
})

describe('readRoles', () => {
  it('reads Keycloak realm and client roles, ignoring malformed entries', () => {
    const roles = readRoles(
      claims({
        realm_access: { roles: ['admin', 1, 'user'] },
        resource_access: { office: { roles: ['editor'] }, broken: 'x', desk: { roles: 'agent' } },
      }) as TokenClaims,
    )
    expect(roles.realm).toEqual(['admin', 'user'])
    expect(roles.clients).toEqual({ office: ['editor'], desk: ['agent'] })
  })

  it('does not read roles through the prototype chain', () => {
    const roles = readRoles(
      JSON.parse('{"resource_access":{"__proto__":{"roles":["admin"]}}}') as TokenClaims,
    )
    expect(Object.hasOwn(roles.clients, 'toString')).toBe(false)
    expect(roles.realm).toEqual([])
  })

  it('keeps clients named __proto__, constructor and toString as own keys, and inherits nothing', () => {
    const roles = readRoles(
      JSON.parse(
        '{"resource_access":{"__proto__":{"roles":["a"]},"constructor":{"roles":["b"]},"toString":{"roles":["c"]}}}',
      ) as TokenClaims,
    )
    expect(Object.keys(roles.clients)).toEqual(['__proto__', 'constructor', 'toString'])
    expect(Object.getOwnPropertyDescriptor(roles.clients, '__proto__')?.value).toEqual(['a'])
    expect(roles.clients['constructor']).toEqual(['b'])
    const none = readRoles(claims({ resource_access: { office: { roles: ['x'] } } }) as TokenClaims)
    for (const inherited of ['toString', 'constructor', 'hasOwnProperty', '__proto__']) {
      expect(none.clients[inherited]).toBeUndefined()
      expect(inherited in none.clients).toBe(false)
    }
    expect(Object.isFrozen(none.clients)).toBe(true)
    expect(Object.isFrozen(readRoles(claims({}) as TokenClaims).clients)).toBe(true)
  })
})

describe('createClaimReaders', () => {
  const token = (extra: Record<string, unknown>) => claims(extra) as unknown as TokenClaims

  it('keeps the default read-outs for what a mapping does not name', () => {
    const readers = createClaimReaders({ clientId: ['cid'] })
    expect(readers.scopes).toBe(readScopes)
    expect(readers.roles).toBe(readRoles)
    expect(createClaimReaders(undefined)).toBe(DEFAULT_READERS)
  })

  it('merges scopes from every named claim, strings and arrays, without repeats', () => {
    const readers = createClaimReaders({ scopes: ['scope', 'permissions'] })
    expect(
      readers.scopes(token({ scope: 'openid read:a', permissions: ['read:a', 'write:a', 7] })),
    ).toEqual(['openid', 'read:a', 'write:a'])
    expect(createClaimReaders({ scopes: ['scp'] }).scopes(token({ scp: ['a', 'b'] }))).toEqual([
      'a',
      'b',
    ])
  })

  it('reads flat role claims into roles.realm, and no client roles', () => {
    const roles = createClaimReaders({ roles: ['cognito:groups'] }).roles(
      token({ 'cognito:groups': ['admins'], realm_access: { roles: ['ignored'] } }),
    )
    expect(roles).toEqual({ realm: ['admins'], clients: {} })
  })

  it('takes the first named client claim that is a non-empty string', () => {
    const clientId = createClaimReaders({ clientId: ['azp', 'appid'] }).clientId
    expect(clientId({ azp: '', appid: 'app-1' })).toBe('app-1')
    expect(clientId({ azp: 'spa', appid: 'app-1' })).toBe('spa')
    expect(clientId({ cid: 'x' })).toBeUndefined()
  })
})

describe('checkClaims with issuer rules', () => {
  const reason = (extra: Record<string, unknown>, rules: Partial<ClaimRules>) => {
    try {
      checkClaims(HEADER, claims(extra), { ...RULES, ...rules }, NOW_MS)
    } catch (error) {
      return {
        reason: (error as InvalidTokenError).reason,
        detail: (error as InvalidTokenError).detail,
      }
    }
    return undefined
  }
  const cognitoRules: Partial<ClaimRules> = {
    audiences: new Set(),
    withoutAudience: new Set(['app-1']),
    accessTokenClaims: [['token_use', 'access']],
    readers: createClaimReaders({ clientId: ['client_id'] }),
  }

  it('accepts a token without aud from a listed client when its access-token claim matches', () => {
    expect(
      reason({ aud: undefined, client_id: 'app-1', token_use: 'access' }, cognitoRules),
    ).toBeUndefined()
  })

  it.each<[string, Record<string, unknown>, string]>([
    ['an unlisted client', { aud: undefined, client_id: 'app-2', token_use: 'access' }, 'client'],
    ['no client at all', { aud: undefined, token_use: 'access' }, 'client'],
    ['token_use id', { aud: undefined, client_id: 'app-1', token_use: 'id' }, 'token_type'],
    [
      'a present aud not accepted',
      { aud: 'app-1', client_id: 'app-1', token_use: 'access' },
      'audience',
    ],
  ])('refuses %s', (_name, extra, expected) => {
    expect(reason(extra, cognitoRules)?.reason).toBe(expected)
  })

  it('still refuses a token without aud where no rule accepts one', () => {
    expect(reason({ aud: undefined, client_id: 'app-1' }, {})?.reason).toBe('audience')
  })

  it('checks allowedClientIds against the mapped client claim', () => {
    const okta = { readers: createClaimReaders({ clientId: ['cid'] }) }
    expect(
      reason({ cid: 'okta-1' }, { ...okta, allowedClientIds: new Set(['okta-1']) }),
    ).toBeUndefined()
    expect(reason({ cid: 'okta-2' }, { ...okta, allowedClientIds: new Set(['okta-1']) })).toEqual({
      reason: 'client',
      detail: { clientId: 'okta-2' },
    })
  })
})
