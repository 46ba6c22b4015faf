/**
 * Authorization guards: checks on an admitted request's scopes and roles. The adapters wrap them
 * as route middleware; the core only decides.
 *
 * @module
 */
import { InsufficientScopeError, TokenMissingError } from '../errors.js'
import type { Admission } from '../types.js'

/**
 * Throws when the admission does not meet the requirement; returns nothing otherwise. The errors
 * carry no challenge: the gate that runs the guard (`gate.authorize`) adds its own.
 */
export type Guard = (auth: Admission | undefined) => void

// Scope tokens (RFC 6749 §3.3): %x21 / %x23-5B / %x5D-7E, so a quote cannot break the challenge.
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/

function names(values: readonly string[], what: string, factory: string): readonly string[] {
  if (
    values.length === 0 ||
    values.some((value) => typeof value !== 'string' || !SCOPE_TOKEN.test(value))
  ) {
    throw new TypeError(
      `${factory}(): pass one or more ${what}, each without spaces, quotes or backslashes`,
    )
  }
  return Object.freeze([...values])
}

function guard(required: readonly string[], satisfied: (auth: Admission) => boolean): Guard {
  const scope = required.join(' ')
  return (auth) => {
    if (auth === undefined) throw new TokenMissingError()
    if (!satisfied(auth)) throw new InsufficientScopeError({ requiredScope: scope })
  }
}

/** Requires every one of `scopes` (exact match against `scope` or `scp`). */
export function requireScopes(...scopes: string[]): Guard {
  const required = names(scopes, 'scopes', 'requireScopes')
  return guard(required, (auth) => required.every((scope) => auth.scopes.includes(scope)))
}

/** Requires at least one of `scopes`. */
export function requireAnyScope(...scopes: string[]): Guard {
  const required = names(scopes, 'scopes', 'requireAnyScope')
  return guard(required, (auth) => required.some((scope) => auth.scopes.includes(scope)))
}

/** Requires every one of `roles` in Keycloak's `realm_access.roles`. */
export function requireRealmRoles(...roles: string[]): Guard {
  const required = names(roles, 'roles', 'requireRealmRoles')
  return guard(required, (auth) => required.every((role) => auth.roles.realm.includes(role)))
}

/** Requires every one of `roles` in Keycloak's `resource_access[clientId].roles`. */
export function requireClientRoles(clientId: string, ...roles: string[]): Guard {
  if (typeof clientId !== 'string' || clientId === '') {
    throw new TypeError('requireClientRoles(): the first argument must be the client id')
  }
  const required = names(roles, 'roles', 'requireClientRoles')
  return guard(required, (auth) => {
    const granted = Object.hasOwn(auth.roles.clients, clientId)
      ? auth.roles.clients[clientId]
      : undefined
    return granted !== undefined && required.every((role) => granted.includes(role))
  })
}

/** The guard factories as an adapter exposes them, each returning that framework's middleware. */
export interface GuardMiddlewareFactories<Middleware> {
  /** Route middleware: 403 `insufficient_scope` unless the token has every one of `scopes`. */
  requireScopes(...scopes: string[]): Middleware
  /** Route middleware: 403 `insufficient_scope` unless the token has at least one of `scopes`. */
  requireAnyScope(...scopes: string[]): Middleware
  /** Route middleware: 403 unless Keycloak's `realm_access.roles` has every one of `roles`. */
  requireRealmRoles(...roles: string[]): Middleware
  /** Route middleware: 403 unless `resource_access[clientId].roles` has every one of `roles`. */
  requireClientRoles(clientId: string, ...roles: string[]): Middleware
}

/** Builds an adapter's guard factories from its one way of turning a guard into middleware. */
export function guardMiddleware<Middleware>(
  wrap: (guard: Guard) => Middleware,
): GuardMiddlewareFactories<Middleware> {
  return {
    requireScopes: (...scopes) => wrap(requireScopes(...scopes)),
    requireAnyScope: (...scopes) => wrap(requireAnyScope(...scopes)),
    requireRealmRoles: (...roles) => wrap(requireRealmRoles(...roles)),
    requireClientRoles: (clientId, ...roles) => wrap(requireClientRoles(clientId, ...roles)),
  }
}
