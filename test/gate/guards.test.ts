import { describe, expect, it } from 'vitest'

import { InsufficientScopeError, TokenMissingError } from '../../src/errors.js'
import {
  requireAnyScope,
  requireClientRoles,
  requireRealmRoles,
  requireScopes,
} from '../../src/gate/guards.js'
import type { Admission } from '../../src/types.js'

function admission(
  scopes: string[],
  realmRoles: string[] = [],
  clients: Record<string, string[]> = {},
): Admission {
  return {
    token: 't',
    header: { alg: 'RS256' },
    claims: { iss: 'i', exp: 1 },
    issuer: 'i',
    realm: undefined,
    subject: 'u',
    clientId: 'c',
    scopes,
    roles: { realm: realmRoles, clients },
    tenant: undefined,
    plan: undefined,
    actor: undefined,
    tokenFor: () => Promise.reject(new Error('no exchanger')),
  }
}

describe('guards', () => {
  it('lets a token with every required scope through', () => {
    expect(() => requireScopes('a', 'b')(admission(['b', 'a', 'c']))).not.toThrow()
  })

  it('answers 403 with the required scopes when one is missing', () => {
    expect(() => requireScopes('a', 'b')(admission(['a']))).toThrow(InsufficientScopeError)
    try {
      requireScopes('a', 'b')(admission(['a']))
    } catch (error) {
      expect(error).toMatchObject({ requiredScope: 'a b', reason: 'insufficient_scope' })
    }
  })

  it('matches scopes exactly, not by prefix or case', () => {
    expect(() =>
      requireScopes('billing:read')(admission(['billing:read:all', 'Billing:read'])),
    ).toThrow(InsufficientScopeError)
  })

  it('needs only one scope for requireAnyScope', () => {
    expect(() => requireAnyScope('a', 'b')(admission(['b']))).not.toThrow()
    expect(() => requireAnyScope('a', 'b')(admission(['c']))).toThrow(InsufficientScopeError)
  })

  it('checks realm roles and client roles', () => {
    expect(() => requireRealmRoles('admin')(admission([], ['admin']))).not.toThrow()
    expect(() => requireRealmRoles('admin')(admission([], ['user']))).toThrow(
      InsufficientScopeError,
    )
    expect(() =>
      requireClientRoles('office', 'editor')(admission([], [], { office: ['editor'] })),
    ).not.toThrow()
    expect(() =>
      requireClientRoles('office', 'editor')(admission([], [], { desk: ['editor'] })),
    ).toThrow(InsufficientScopeError)
  })

  it('does not find client roles through the prototype chain', () => {
    expect(() => requireClientRoles('constructor', 'x')(admission([]))).toThrow(
      InsufficientScopeError,
    )
  })

  it('answers 401 without an error code when nothing was admitted', () => {
    expect(() => requireScopes('a')(undefined)).toThrow(TokenMissingError)
  })

  it.each([
    ['no scopes', () => requireScopes()],
    ['a scope with a space', () => requireScopes('a b')],
    ['a scope with a quote', () => requireAnyScope('a"')],
    ['an empty role', () => requireRealmRoles('')],
    ['no client id', () => requireClientRoles('', 'r')],
    ['a non-string', () => requireScopes(1 as unknown as string)],
  ])('refuses %s at creation', (_, create) => {
    expect(create).toThrow(TypeError)
  })
})
