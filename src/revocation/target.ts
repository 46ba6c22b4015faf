/**
 * What a revocation names, as `gate.revoke()` takes it and as the `load` hook returns it: its own
 * module, so that the options (which validate `load`) and the list share it without a circle.
 *
 * @module
 */

/** Which tokens a revocation names: exactly one of `jti`, `sid`, `sub`, `clientId` or `all`. */
export interface RevocationTarget {
  /** The exact `iss`. Default: the only configured issuer (required when there are several). */
  readonly issuer?: string
  /** One token. */
  readonly jti?: string
  /** Every token of a sign-in session (the `sid` claim). */
  readonly sid?: string
  /** Every token of a user: log a user out everywhere. */
  readonly sub?: string
  /** Every token issued to an OAuth client (`azp`, else `client_id`). */
  readonly clientId?: string
  /** Every token of the issuer (Keycloak's realm not-before). */
  readonly all?: true
}

/** A revocation to make. */
export interface RevokeOptions extends RevocationTarget {
  /**
   * Tokens whose `iat` is before this time (seconds since the epoch) are refused; later ones pass
   * (a user who signs in again). Default: the second after now plus the gate's
   * `clockToleranceSeconds`, so that no token issued before the call survives it, even one whose
   * provider's clock runs ahead by up to the tolerance (a user signing in again within that
   * margin is refused too). At most an hour ahead. Ignored for `jti`.
   */
  readonly notBefore?: number
}
