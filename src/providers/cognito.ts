/**
 * `cognito()`: the issuer entry for an Amazon Cognito user pool.
 *
 * @module
 */
import type { IssuerOptions } from '../token/issuers.js'
import { describeValue } from '../validate.js'
import { nonEmptyStrings, profileOptions } from './host.js'

/** Options of {@link cognito}. */
export interface CognitoOptions {
  /** The pool's AWS region, e.g. `eu-west-1`. Optional: the pool id starts with it. */
  readonly region?: string
  /** The user pool id, e.g. `eu-west-1_AbCdEf123`. */
  readonly userPoolId: string
  /**
   * The app client ids whose access tokens this API accepts. Cognito access tokens carry no `aud`;
   * `client_id` on this list stands in for it.
   */
  readonly clientIds: readonly string[]
}

const OPTIONS = ['region', 'userPoolId', 'clientIds']
const REGION = /^[a-z]{2}(?:-[a-z]+)+-\d{1,2}$/
const POOL_ID = /^([a-z]{2}(?:-[a-z]+)+-\d{1,2})_[0-9A-Za-z]{1,55}$/

/**
 * The issuer entry for a Cognito user pool: `iss` `https://cognito-idp.{region}.amazonaws.com/{userPoolId}`,
 * keys at `{issuer}/.well-known/jwks.json`. Cognito access tokens have no `aud`: they are accepted
 * when `client_id` is one of `clientIds` and `token_use` is `"access"`, so an ID token (which has
 * `aud` and `token_use: "id"`) is refused even where its audience would match. Scopes are `scope`,
 * groups (`cognito:groups`) the roles (`requireRealmRoles('admins')`).
 *
 * @example
 * ```ts
 * createGate({ issuers: cognito({ userPoolId: 'eu-west-1_AbCdEf123', clientIds: ['4jf0d1g2h3…'] }) })
 * ```
 * @throws TypeError when the pool id is not one, its region differs from `region`, or `clientIds` is empty.
 */
export function cognito(options: CognitoOptions): IssuerOptions[] {
  const { region, userPoolId, clientIds } = profileOptions(options, 'cognito', OPTIONS)
  const match = typeof userPoolId === 'string' ? POOL_ID.exec(userPoolId) : null
  if (match === null) {
    throw new TypeError(
      `cognito(options): "userPoolId" must be a user pool id, e.g. "eu-west-1_AbCdEf123" (got ${describeValue(userPoolId, true)})`,
    )
  }
  const poolRegion = match[1] as string
  if (region !== undefined && (typeof region !== 'string' || !REGION.test(region))) {
    throw new TypeError(
      `cognito(options): "region" must be an AWS region, e.g. "eu-west-1" (got ${describeValue(region, true)})`,
    )
  }
  if (region !== undefined && region !== poolRegion) {
    throw new TypeError(
      `cognito(options): "userPoolId" ${JSON.stringify(userPoolId)} is a pool of ${poolRegion}, not of "region" ${JSON.stringify(region)}`,
    )
  }
  const clients = nonEmptyStrings(
    clientIds,
    'cognito(options): "clientIds"',
    'a non-empty array of the app client ids whose tokens this API accepts',
  )
  const issuer = `https://cognito-idp.${poolRegion}.amazonaws.com/${userPoolId}`
  return [
    {
      issuer,
      jwksUri: `${issuer}/.well-known/jwks.json`,
      withoutAudience: { clientIds: clients },
      accessTokenClaims: { token_use: 'access' },
      claims: { scopes: ['scope'], roles: ['cognito:groups'], clientId: ['client_id'] },
    },
  ]
}
