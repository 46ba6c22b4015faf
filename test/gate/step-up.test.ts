/**
 * The step-up guards in the core (RFC 9470): what they refuse, the typed error they throw, and the
 * challenge a gate puts on it (with the metadata URL and DPoP, as on every other refusal).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import {
  InsufficientUserAuthenticationError,
  isTollgateError,
  renderError,
  TokenMissingError,
} from '../../src/errors.js'
import type { GateEvent } from '../../src/events.js'
import { createGate } from '../../src/gate/gate.js'
import { requireAcr, requireRecentSignIn } from '../../src/gate/step-up.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import type { Admission, TokenClaims } from '../../src/types.js'

function admission(claims: Partial<TokenClaims>): Admission {
  return {
    token: 't',
    header: { alg: 'RS256' },
    claims: { iss: 'i', exp: 1, ...claims },
    issuer: 'i',
    realm: undefined,
    subject: 'u',
    clientId: 'c',
    scopes: [],
    roles: { realm: [], clients: {} },
    tenant: undefined,
    plan: undefined,
    actor: undefined,
    tokenFor: () => Promise.reject(new Error('no exchanger in this test')),
  }
}

function thrown(run: () => void): unknown {
  try {
    run()
  } catch (error) {
    return error
  }
  throw new Error('did not throw')
}

const now = () => Math.floor(Date.now() / 1000)

describe('requireAcr', () => {
  it('admits an acr among the values, compared exactly', () => {
    const guard = requireAcr('urn:example:mfa', 'urn:example:hwk')
    expect(() => guard(admission({ acr: 'urn:example:hwk' }))).not.toThrow()
    for (const acr of [
      'URN:example:mfa',
      'urn:example:mfa ',
      'urn:example',
      undefined,
      1,
      ['urn:example:mfa'],
    ]) {
      expect(() => guard(admission({ acr }))).toThrow(InsufficientUserAuthenticationError)
    }
  })

  // RFC 9470 §3 / OIDC Core §3.1.2.1: acr_values is a space-separated list of whole values. A
  // token whose acr is a prefix of, an extension of, or the list itself must not pass.
  it('compares whole values: a prefix, an extension or the joined list of the values is refused', () => {
    const guard = requireAcr('phrh', 'urn:example:mfa')
    expect(() => guard(admission({ acr: 'phrh' }))).not.toThrow()
    for (const acr of ['phr', 'phrh2', 'hrh', 'phrh urn:example:mfa', 'urn:example:mf', '']) {
      expect(thrown(() => guard(admission({ acr })))).toMatchObject({
        reason: 'acr_insufficient',
      })
    }
    const shorter = requireAcr('phr')
    expect(thrown(() => shorter(admission({ acr: 'phrh' })))).toMatchObject({
      reason: 'acr_insufficient',
    })
  })

  it('throws the typed error: code, reason, the acr values, 401, no challenge of its own', () => {
    const error = thrown(() => requireAcr('urn:example:mfa')(admission({ acr: '0' })))
    expect(error).toBeInstanceOf(InsufficientUserAuthenticationError)
    expect(isTollgateError(error)).toBe(true)
    expect(error).toMatchObject({
      code: 'ERR_INSUFFICIENT_USER_AUTHENTICATION',
      reason: 'acr_insufficient',
      status: 401,
      error: 'insufficient_user_authentication',
      acrValues: ['urn:example:mfa'],
      maxAgeSeconds: undefined,
      detail: { acr: '0' },
      headers: {},
    })
  })

  it('without an admission, asks for a token (401, no error code)', () => {
    expect(thrown(() => requireAcr('urn:example:mfa')(undefined))).toBeInstanceOf(TokenMissingError)
  })

  it.each([[[]], [['']], [['a b']], [['a"b']], [['a\\b']], [[1]]])(
    'refuses %j at creation, saying what to pass',
    (values) => {
      expect(() => requireAcr(...(values as string[]))).toThrow(
        /^requireAcr\(\): pass one or more acr values/,
      )
    },
  )
})

describe('requireRecentSignIn', () => {
  it('admits auth_time within max_age, refuses it beyond, or missing, or not a number', () => {
    const guard = requireRecentSignIn(60)
    expect(() => guard(admission({ auth_time: now() - 30 }))).not.toThrow()
    for (const auth_time of [now() - 120, undefined, String(now()), Number.NaN, null]) {
      const error = thrown(() => guard(admission({ auth_time })))
      expect(error).toMatchObject({
        code: 'ERR_INSUFFICIENT_USER_AUTHENTICATION',
        reason: 'authentication_too_old',
        maxAgeSeconds: 60,
        acrValues: undefined,
      })
    }
  })

  it('max_age 0 asks for a sign-in now: a sign-in a second old is refused', () => {
    expect(() => requireRecentSignIn(0)(admission({ auth_time: now() - 2 }))).toThrow(
      InsufficientUserAuthenticationError,
    )
  })

  // OIDC Core §2: auth_time is the time the authentication occurred. An attacker who controls a
  // provider's claims (or a provider with a broken clock) names a sign-in in the future: without
  // an upper bound it counts as recent for ever (RFC 9470 §7: the resource server decides on the
  // token's authentication information).
  it('refuses an auth_time in the future beyond the tolerance, with its own reason (10 years ahead included)', () => {
    const guard = requireRecentSignIn(60)
    for (const auth_time of [now() + 60, now() + 10 * 365 * 86_400]) {
      const error = thrown(() => guard(admission({ auth_time })))
      expect(error).toBeInstanceOf(InsufficientUserAuthenticationError)
      expect(error).toMatchObject({
        code: 'ERR_INSUFFICIENT_USER_AUTHENTICATION',
        reason: 'authentication_in_future',
        status: 401,
        maxAgeSeconds: 60,
        message: 'a more recent authentication is required',
        detail: { authTime: auth_time, iat: undefined },
      })
    }
  })

  it('admits an auth_time ahead of this clock within the tolerance (default 5 s), and as far as the option says', () => {
    expect(() => requireRecentSignIn(60)(admission({ auth_time: now() + 2 }))).not.toThrow()
    const lenient = requireRecentSignIn(60, { clockToleranceSeconds: 120 })
    expect(() => lenient(admission({ auth_time: now() + 60 }))).not.toThrow()
    const strict = requireRecentSignIn(60, { clockToleranceSeconds: 0 })
    expect(thrown(() => strict(admission({ auth_time: now() + 30 })))).toMatchObject({
      reason: 'authentication_in_future',
    })
  })

  it("refuses an auth_time later than the token's iat beyond the tolerance: a token issued before its sign-in", () => {
    const guard = requireRecentSignIn(600)
    const iat = now() - 300
    const error = thrown(() => guard(admission({ iat, auth_time: now() - 60 })))
    expect(error).toMatchObject({
      reason: 'authentication_in_future',
      detail: { authTime: now() - 60, iat },
    })
    // Within the tolerance of iat, or before it: a sign-in that did happen.
    expect(() => guard(admission({ iat, auth_time: iat + 4 }))).not.toThrow()
    expect(() => guard(admission({ iat, auth_time: iat - 100 }))).not.toThrow()
  })

  it('the tolerance never lengthens max_age: a sign-in max_age + 1 s old is refused', () => {
    const guard = requireRecentSignIn(60, { clockToleranceSeconds: 300 })
    expect(thrown(() => guard(admission({ auth_time: now() - 62 })))).toMatchObject({
      reason: 'authentication_too_old',
    })
  })

  it.each([-1, 1.5, 301, '5', Number.NaN])(
    'refuses clockToleranceSeconds %s at creation, naming the option',
    (value) => {
      expect(() => requireRecentSignIn(60, { clockToleranceSeconds: value as number })).toThrow(
        /^requireRecentSignIn\(\): "clockToleranceSeconds" must be an integer from 0 to 300/,
      )
    },
  )

  it.each([-1, 1.5, Number.NaN, '60', 31_536_001])('refuses %s at creation', (value) => {
    expect(() => requireRecentSignIn(value as number)).toThrow(
      /^requireRecentSignIn\(\): pass the most seconds since sign-in the route accepts/,
    )
  })
})

describe('a gate challenges for step-up (RFC 9470 §3)', () => {
  let issuer: TestIssuer
  beforeAll(async () => {
    issuer = await createTestIssuer({ realms: ['acme'], audience: 'https://api.example.test/pay' })
  })
  afterAll(async () => {
    await issuer.close()
  })

  async function refusal(options: Record<string, unknown>, guard: ReturnType<typeof requireAcr>) {
    const events: GateEvent[] = []
    const gate = createGate({
      issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
      audience: 'https://api.example.test/pay',
      onEvent: (event) => events.push(event),
      ...options,
    })
    const { auth } = await gate.check({
      headers: { authorization: `Bearer ${await issuer.mint({ acr: '1', auth_time: 1 })}` },
    })
    const error = thrown(() => gate.authorize(guard, auth))
    return { error: error as InsufficientUserAuthenticationError, events }
  }

  it('acr_values after error_description, then resource_metadata; the body names the error', async () => {
    const { error, events } = await refusal(
      { resourceMetadata: { resource: 'https://api.example.test/pay' } },
      requireAcr('urn:example:mfa', 'urn:example:hwk'),
    )
    expect(error.headers['WWW-Authenticate']).toBe(
      'Bearer realm="api", error="insufficient_user_authentication", error_description="a stronger authentication is required", acr_values="urn:example:mfa urn:example:hwk", resource_metadata="https://api.example.test/.well-known/oauth-protected-resource/pay"',
    )
    expect(JSON.parse(renderError(error).body)).toEqual({
      error: 'insufficient_user_authentication',
      error_description: 'a stronger authentication is required',
    })
    expect(events.at(-1)).toMatchObject({
      type: 'rejected',
      reason: 'acr_insufficient',
      status: 401,
    })
  })

  it('max_age as a number (unquoted), on the DPoP challenge too when DPoP is on', async () => {
    const { error } = await refusal(
      { dpop: { mode: 'allowed', publicBaseUrl: 'https://api.example.test' } },
      requireRecentSignIn(300),
    )
    const challenge = error.headers['WWW-Authenticate']
    expect(challenge).toMatch(
      /^Bearer realm="api", error="insufficient_user_authentication", error_description="a more recent authentication is required", max_age=300, DPoP realm="api", algs="[^"]+"$/,
    )
  })

  it('two guards with different values get their own challenges (none taken from the other)', async () => {
    const first = await refusal({}, requireAcr('urn:a'))
    const second = await refusal({}, requireAcr('urn:b'))
    expect(first.error.headers['WWW-Authenticate']).toContain('acr_values="urn:a"')
    expect(second.error.headers['WWW-Authenticate']).toContain('acr_values="urn:b"')
  })
})
