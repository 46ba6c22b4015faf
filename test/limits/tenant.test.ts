import { describe, expect, it, vi } from 'vitest'

import { InvalidTokenError, TenantRefusedError } from '../../src/errors.js'
import type { TenantOptions, TenantPolicy, VerifiedToken } from '../../src/limits/tenant.js'
import {
  createTenantResolver,
  DEFAULT_TENANT_ID_PATTERN,
  normalizeTenantOptions,
} from '../../src/limits/tenant.js'

const ISSUER = 'https://sso.example.com/realms/acme'

function verified(
  claims: Record<string, unknown>,
  realm: string | undefined = 'acme',
): VerifiedToken {
  return {
    header: { alg: 'RS256', kid: 'k1' },
    claims: { iss: ISSUER, exp: 2_000_000_000, sub: 'user-1', ...claims },
    issuer: ISSUER,
    realm,
  }
}

/** Resolves, turning a sync throw into a rejection so both shapes are asserted the same way. */
async function resolve(options: TenantOptions, token: VerifiedToken) {
  return createTenantResolver(normalizeTenantOptions(options))(token)
}

async function rejection(options: TenantOptions, token: VerifiedToken): Promise<unknown> {
  try {
    await resolve(options, token)
  } catch (error) {
    return error
  }
  throw new Error('expected the resolver to refuse')
}

const INVALID_TENANT = {
  code: 'ERR_TENANT_INVALID',
  status: 401,
  challenge: 'invalid_token',
}

describe('createTenantResolver', () => {
  describe('claim strategy', () => {
    it('reads the tenant from the "tenant" claim by default', async () => {
      await expect(resolve({}, verified({ tenant: 'acme' }))).resolves.toEqual({
        id: 'acme',
        plan: undefined,
      })
    })

    it('follows a dot path into nested claims', async () => {
      const token = verified({ org: { id: 'acme-eu', name: 'Acme' } })
      await expect(resolve({ claim: 'org.id' }, token)).resolves.toMatchObject({ id: 'acme-eu' })
    })

    it('reads a claim whose name contains dots when the path is given as segments', async () => {
      const token = verified({ 'https://example.com/tenant': 'acme' })
      await expect(
        resolve({ claim: ['https://example.com/tenant'] }, token),
      ).resolves.toMatchObject({ id: 'acme' })
    })

    it('returns synchronously when no policy is configured', () => {
      const result = createTenantResolver(normalizeTenantOptions({}))(verified({ tenant: 'acme' }))
      expect(result).toEqual({ id: 'acme', plan: undefined })
    })

    it.each([
      ['a number', 42],
      ['zero', 0],
      ['a boolean', true],
      ['null', null],
      ['an object', { id: 'acme' }],
      ['an array of one id', ['acme']],
      ['an array of two ids', ['acme', 'globex']],
      ['an empty string', ''],
      ['65 characters', 'a'.repeat(65)],
      ['10 000 characters', 'a'.repeat(10_000)],
      ['non-ASCII letters', 'äcme'],
      ['a homoglyph', 'аcme'],
      ['an emoji', 'acme🚀'],
      ['a path traversal', '../x'],
      ['a leading dot', '.acme'],
      ['a slash', 'acme/eu'],
      ['a space', 'acme eu'],
      ['a trailing newline', 'acme\n'],
      ['a CRLF injection', 'acme\r\nX-Evil: 1'],
      ['a NUL byte', 'acme\u0000'],
      ['a quote', 'acme"'],
      ['Redis hash-tag braces', '{acme}'],
      ['a glob', 'acme*'],
      ['__proto__ as a value', '__proto__'],
    ])('refuses a tenant claim holding %s with 401 ERR_TENANT_INVALID', async (_name, value) => {
      const error = await rejection({}, verified({ tenant: value }))
      expect(error).toBeInstanceOf(InvalidTokenError)
      expect(error).toMatchObject(INVALID_TENANT)
    })

    it('refuses a token without the tenant claim with 401 ERR_TENANT_INVALID', async () => {
      expect(await rejection({}, verified({}))).toMatchObject(INVALID_TENANT)
    })

    it.each([
      ['a missing intermediate object', 'org.id', { tenant: 'acme' }],
      ['a string in the middle of the path', 'org.id', { org: 'acme' }],
      ['null in the middle of the path', 'org.id', { org: null }],
      ['an array in the middle of the path', 'org.0', { org: ['acme'] }],
      ['an inherited property', 'org.toString', { org: {} }],
      ['a deeper path than the claim', 'org.id.value', { org: { id: 'acme' } }],
    ])('refuses %s', async (_name, claim, claims) => {
      expect(await rejection({ claim }, verified(claims))).toMatchObject(INVALID_TENANT)
    })

    it('never reads a tenant from an own "__proto__" key created by JSON.parse', async () => {
      const claims = JSON.parse('{"org": {"__proto__": {"id": "acme"}}}') as Record<string, unknown>
      expect(await rejection({ claim: 'org.id' }, verified(claims))).toMatchObject(INVALID_TENANT)
    })

    it('accepts the longest id the default pattern allows', async () => {
      const id = `a${'b'.repeat(63)}`
      await expect(resolve({}, verified({ tenant: id }))).resolves.toMatchObject({ id })
    })

    it.each([
      'acme',
      'ACME',
      '42',
      'acme.eu',
      'acme_eu',
      'acme:eu',
      'acme-eu',
      '0f8fad5b-d9cb-469f-a165-70867728950e',
    ])('accepts the id %j', async (id) => {
      await expect(resolve({}, verified({ tenant: id }))).resolves.toMatchObject({ id })
    })
  })

  describe('realm strategy', () => {
    it('takes the tenant from the realm of the verified issuer', async () => {
      await expect(
        resolve({ from: 'realm' }, verified({ tenant: 'other' }, 'acme')),
      ).resolves.toEqual({
        id: 'acme',
        plan: undefined,
      })
    })

    it('refuses an issuer without a realm with 401 ERR_TENANT_INVALID', async () => {
      expect(
        await rejection({ from: 'realm' }, { ...verified({}), realm: undefined }),
      ).toMatchObject(INVALID_TENANT)
    })
  })

  describe('function strategy', () => {
    it('takes the tenant the function returns', async () => {
      const from = (token: VerifiedToken) =>
        token.claims['azp'] === 'billing' ? 'acme' : undefined
      await expect(resolve({ from }, verified({ azp: 'billing' }))).resolves.toMatchObject({
        id: 'acme',
      })
    })

    it.each([
      ['undefined', undefined],
      ['a number', 7],
      ['an array', ['acme']],
      ['a malformed id', '../acme'],
    ])('refuses a function result of %s with 401 ERR_TENANT_INVALID', async (_name, value) => {
      expect(await rejection({ from: () => value }, verified({}))).toMatchObject(INVALID_TENANT)
    })

    it('refuses with 401 and keeps the exception as cause when the function throws', async () => {
      const bug = new TypeError("Cannot read properties of undefined (reading 'id')")
      const error = await rejection(
        {
          from: () => {
            throw bug
          },
        },
        verified({}),
      )
      expect(error).toMatchObject({ ...INVALID_TENANT, cause: bug })
    })
  })

  describe('id pattern', () => {
    it('applies a custom anchored pattern', async () => {
      const options = { idPattern: /^t-[0-9]{3}$/ }
      await expect(resolve(options, verified({ tenant: 't-123' }))).resolves.toMatchObject({
        id: 't-123',
      })
      expect(await rejection(options, verified({ tenant: 'acme' }))).toMatchObject(INVALID_TENANT)
    })

    it('caps ids at 256 characters whatever the pattern allows', async () => {
      const options = { idPattern: /^[a-z]+$/ }
      await expect(resolve(options, verified({ tenant: 'a'.repeat(256) }))).resolves.toBeDefined()
      expect(await rejection(options, verified({ tenant: 'a'.repeat(257) }))).toMatchObject(
        INVALID_TENANT,
      )
    })

    it('exports its default pattern', () => {
      expect(DEFAULT_TENANT_ID_PATTERN.test('acme')).toBe(true)
      expect(DEFAULT_TENANT_ID_PATTERN.test('-acme')).toBe(false)
    })
  })

  describe('plans', () => {
    it('reads the plan from the plan claim', async () => {
      const token = verified({ tenant: 'acme', plan: 'pro' })
      await expect(resolve({ planClaim: 'plan' }, token)).resolves.toEqual({
        id: 'acme',
        plan: 'pro',
      })
    })

    it.each([
      ['a number', 3],
      ['an object', { name: 'pro' }],
      ['a malformed name', 'pro plan'],
      ['a quote', 'pro"'],
      ['a missing claim', undefined],
    ])('ignores a plan claim holding %s', async (_name, plan) => {
      const token = verified({ tenant: 'acme', plan })
      await expect(resolve({ planClaim: 'plan' }, token)).resolves.toEqual({
        id: 'acme',
        plan: undefined,
      })
    })
  })

  describe('policy', () => {
    it('passes the validated id and the verified token to the policy', async () => {
      const policy = vi.fn(() => ({ action: 'admit' as const }))
      const token = verified({ tenant: 'acme' })
      await resolve({ policy }, token)
      expect(policy).toHaveBeenCalledWith('acme', token)
    })

    it('never calls the policy for a malformed id', async () => {
      const policy = vi.fn(() => ({ action: 'admit' as const }))
      await rejection({ policy }, verified({ tenant: '../x' }))
      expect(policy).not.toHaveBeenCalled()
    })

    it('answers 403 ERR_TENANT_REFUSED for a tenant the policy refuses', async () => {
      const error = await rejection(
        { policy: async () => ({ action: 'refuse' }) },
        verified({ tenant: 'suspended' }),
      )
      expect(error).toBeInstanceOf(TenantRefusedError)
      expect(error).toMatchObject({
        code: 'ERR_TENANT_REFUSED',
        status: 403,
        error: 'access_denied',
      })
    })

    it('answers 401 invalid_token ERR_TENANT_UNKNOWN for a tenant the policy does not know', async () => {
      const error = await rejection(
        { policy: () => ({ action: 'unknown' }) },
        verified({ tenant: 'x' }),
      )
      expect(error).toMatchObject({
        code: 'ERR_TENANT_UNKNOWN',
        reason: 'tenant_unknown',
        status: 401,
        challenge: 'invalid_token',
      })
    })

    it('gives the plan the policy returns precedence over the plan claim', async () => {
      const token = verified({ tenant: 'acme', plan: 'free' })
      await expect(
        resolve(
          { planClaim: 'plan', policy: () => ({ action: 'admit', plan: 'enterprise' }) },
          token,
        ),
      ).resolves.toEqual({ id: 'acme', plan: 'enterprise' })
    })

    it('falls back to the plan claim when the policy admits without a plan', async () => {
      const token = verified({ tenant: 'acme', plan: 'free' })
      await expect(
        resolve({ planClaim: 'plan', policy: () => ({ action: 'admit' }) }, token),
      ).resolves.toEqual({ id: 'acme', plan: 'free' })
    })

    it.each([
      ['undefined', undefined],
      ['a string', 'admit'],
      ['an unknown action', { action: 'allow' }],
      ['a malformed plan', { action: 'admit', plan: 'pro plan' }],
    ])(
      'throws a TypeError (an application bug) when the policy returns %s',
      async (_name, value) => {
        const policy = (() => value) as unknown as TenantPolicy
        expect(await rejection({ policy }, verified({ tenant: 'acme' }))).toBeInstanceOf(TypeError)
      },
    )

    it('lets an exception from the policy through unchanged', async () => {
      const outage = new Error('tenant database unavailable')
      const policy = async () => {
        throw outage
      }
      expect(await rejection({ policy }, verified({ tenant: 'acme' }))).toBe(outage)
    })
  })

  describe('option validation', () => {
    it.each([
      ['options that are not an object', null, /"tenant" must be an object/],
      ['an unknown option', { tenantClaim: 'org' }, /"tenant.tenantClaim" is not an option/],
      [
        'an unknown strategy',
        { from: 'header' },
        /"tenant.from" must be 'claim', 'realm' or a function/,
      ],
      [
        'a claim with the realm strategy',
        { from: 'realm', claim: 'org' },
        /"tenant.claim" only applies/,
      ],
      [
        'a claim with a function strategy',
        { from: () => 'x', claim: 'org' },
        /"tenant.claim" only applies/,
      ],
      ['an empty claim path', { claim: '' }, /"tenant.claim" must be a dot path/],
      ['an empty path segment', { claim: 'org..id' }, /"tenant.claim" must be a dot path/],
      ['an empty segment array', { claim: [] }, /"tenant.claim" must be a dot path/],
      ['a non-string segment', { claim: ['org', 1] }, /"tenant.claim" must be a dot path/],
      ['a numeric claim', { claim: 5 }, /"tenant.claim" must be a dot path/],
      ['17 segments', { claim: Array(17).fill('a').join('.') }, /1 to 16/],
      ['a __proto__ segment', { claim: '__proto__' }, /must not contain the segment '__proto__'/],
      ['a nested __proto__ segment', { claim: 'org.__proto__.id' }, /segment '__proto__'/],
      ['a constructor segment', { claim: 'constructor' }, /segment 'constructor'/],
      ['a prototype segment', { claim: 'org.prototype' }, /segment 'prototype'/],
      ['a string pattern', { idPattern: '^[a-z]+$' }, /"tenant.idPattern" must be a RegExp/],
      ['a global pattern', { idPattern: /^[a-z]+$/g }, /must not use the g or y flags/],
      ['a sticky pattern', { idPattern: /^[a-z]+$/y }, /must not use the g or y flags/],
      ['an unanchored pattern', { idPattern: /[a-z]+/ }, /must be anchored/],
      ['a pattern without an end anchor', { idPattern: /^[a-z]+/ }, /must be anchored/],
      ['a bad plan claim', { planClaim: 'a.__proto__' }, /"tenant.planClaim" must not contain/],
      [
        'a policy that is not a function',
        { policy: { refuse: ['x'] } },
        /"tenant.policy" must be a function/,
      ],
    ])('throws a TypeError for %s', (_name, options, message) => {
      expect(() => normalizeTenantOptions(options as TenantOptions)).toThrow(TypeError)
      expect(() => normalizeTenantOptions(options as TenantOptions)).toThrow(message)
    })

    it('describes a received value by its type, and quotes an enum it refuses (not secret)', () => {
      expect(() => normalizeTenantOptions({ claim: 7 as unknown as string })).toThrow(
        /got number 7/,
      )
      expect(() => normalizeTenantOptions({ from: 'issuer' as unknown as 'claim' })).toThrow(
        /"tenant.from" must be 'claim', 'realm' or a function \(got 'issuer'\)$/,
      )
    })
  })
})
