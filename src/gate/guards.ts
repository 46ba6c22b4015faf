/**
 * Authorization guards: checks on an admitted request's scopes and roles. The adapters wrap them
 * as route middleware that runs its gate first when the gate has not decided on the request
 * ({@link Decisions}); the core only decides.
 *
 * @module
 */
import { InsufficientScopeError, TokenMissingError } from '../errors.js'
import type { Admission, CheckResult } from '../types.js'
import { type StepUpGuardFactories, stepUpMiddleware } from './step-up.js'

/**
 * Throws when the admission does not meet the requirement; returns nothing otherwise. The errors
 * carry no challenge: the gate that runs the guard (`gate.authorize`) adds its own.
 */
export interface Guard {
  (auth: Admission | undefined): void
  /**
   * The scopes the guard requires, space-separated (`requireScopes`, `requireAnyScope`): the
   * adapters hand them to the gate with the request (`RequestLike.requiredScope`), so that a
   * refusal's challenge names them, a 401 to an anonymous request included (RFC 6750 §3).
   */
  readonly scope?: string | undefined
}

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

function guard(
  required: readonly string[],
  satisfied: (auth: Admission) => boolean,
  scopes: boolean,
): Guard {
  const scope = required.join(' ')
  const check = (auth: Admission | undefined) => {
    if (auth === undefined) throw new TokenMissingError()
    if (!satisfied(auth)) throw new InsufficientScopeError({ requiredScope: scope })
  }
  // Roles are no OAuth scopes: a client cannot ask for them, so a 401 does not name them.
  return scopes ? Object.assign(check, { scope }) : check
}

/** Requires every one of `scopes` (exact match against `scope` or `scp`). */
export function requireScopes(...scopes: string[]): Guard {
  const required = names(scopes, 'scopes', 'requireScopes')
  return guard(required, (auth) => required.every((scope) => auth.scopes.includes(scope)), true)
}

/** Requires at least one of `scopes`. */
export function requireAnyScope(...scopes: string[]): Guard {
  const required = names(scopes, 'scopes', 'requireAnyScope')
  return guard(required, (auth) => required.some((scope) => auth.scopes.includes(scope)), true)
}

/** Requires every one of `roles` in Keycloak's `realm_access.roles`. */
export function requireRealmRoles(...roles: string[]): Guard {
  const required = names(roles, 'roles', 'requireRealmRoles')
  return guard(required, (auth) => required.every((role) => auth.roles.realm.includes(role)), false)
}

/** Requires every one of `roles` in Keycloak's `resource_access[clientId].roles`. */
export function requireClientRoles(clientId: string, ...roles: string[]): Guard {
  if (typeof clientId !== 'string' || clientId === '') {
    throw new TypeError('requireClientRoles(): the first argument must be the client id')
  }
  const required = names(roles, 'roles', 'requireClientRoles')
  return guard(
    required,
    (auth) => {
      const granted = Object.hasOwn(auth.roles.clients, clientId)
        ? auth.roles.clients[clientId]
        : undefined
      return granted !== undefined && required.every((role) => granted.includes(role))
    },
    false,
  )
}

/**
 * What one gate admitted, per request, keyed by the framework's own object for the request
 * (Express's `req`, Koa's `ctx`, Fastify's `request`, Hono's context, the Fetch `Request`, the
 * request NestJS's guard gets). Each adapter instance keeps one, for its gate alone, so that:
 * - a guard runs its gate when the gate has not decided on the request (a route guarded on its
 *   own, as `app.get(path, auth.requireScopes(…), handler)` reads), and the gate decides once per
 *   request however many of its guards and middleware the request passes: one rate-limit point;
 * - a guard never takes another gate's admission for its own gate's (`req.auth` may be another
 *   gate's, for another audience): it reads this record, not the request;
 * - an anonymous request a gate let through (`credentialsRequired: false`, `skip`) is not decided
 *   again: its guards answer it as the gate's middleware followed by them would.
 *
 * Refusals are not kept: a refusal has answered the request, or gone to the framework's error
 * handling. The record lives on the request object, as long as it does.
 */
export class Decisions<Key extends object> {
  // A property of the request object under a symbol of this gate's own, not a WeakMap: with a
  // WeakMap entry per request (V8 keeps them in an ephemeron table that the garbage collector
  // clears), the Express middleware on a cached token took 3.1 µs per request in process on
  // Node 24 against 1.5–1.9 µs with the property, its cost before. Another gate's
  // symbol is another property: no gate reads another's decision. JSON and `Object.keys` do not
  // list symbol properties.
  readonly #slot = Symbol('tollgate.decision')

  /** This gate's admission of the request, or `undefined` when the gate has not admitted it. */
  of(key: Key): CheckResult | undefined {
    return (key as Slots)[this.#slot]
  }

  /** Records the gate's admission of the request, when the adapter applies it (auth, headers). */
  remember(key: Key, result: CheckResult): void {
    ;(key as Slots)[this.#slot] = result
  }
}

type Slots = Record<symbol, CheckResult | undefined>

/**
 * The guard factories as an adapter exposes them, each returning that framework's middleware.
 * Each guard runs its gate first when the gate has not decided on the request, so that it
 * protects a route on its own; on a request the gate has decided on, it takes that decision (the
 * gate decides once, one rate-limit point). Either way the answers, headers and events are those
 * of the gate's middleware followed by the guard, and a guard never admits on another gate's
 * decision.
 */
export interface GuardMiddlewareFactories<Middleware> extends StepUpGuardFactories<Middleware> {
  /**
   * Route middleware: runs the gate when it has not decided on the request, then 403
   * `insufficient_scope` unless the token has every one of `scopes`.
   */
  requireScopes(...scopes: string[]): Middleware
  /**
   * Route middleware: runs the gate when it has not decided on the request, then 403
   * `insufficient_scope` unless the token has at least one of `scopes`.
   */
  requireAnyScope(...scopes: string[]): Middleware
  /**
   * Route middleware: runs the gate when it has not decided on the request, then 403 unless
   * Keycloak's `realm_access.roles` has every one of `roles`.
   */
  requireRealmRoles(...roles: string[]): Middleware
  /**
   * Route middleware: runs the gate when it has not decided on the request, then 403 unless
   * `resource_access[clientId].roles` has every one of `roles`.
   */
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
    ...stepUpMiddleware(wrap),
  }
}
