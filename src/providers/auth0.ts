/**
 * `auth0()`: the issuer entry for an Auth0 tenant.
 *
 * @module
 */
import type { IssuerOptions } from '../token/issuers.js'
import { nonEmptyStrings, profileOptions, providerHost } from './host.js'

/** Options of {@link auth0}. */
export interface Auth0Options {
  /** The tenant's domain (`acme.eu.auth0.com`) or its custom domain, if tokens are issued there. */
  readonly domain: string
  /**
   * The API's Identifier (Auth0 dashboard: Applications › APIs), which Auth0 puts in `aud`. Tokens
   * for another API of the same tenant, and tokens for `/userinfo` alone, are refused.
   */
  readonly audience: string | readonly string[]
}

const OPTIONS = ['domain', 'audience']

/**
 * The issuer entry for an Auth0 tenant: `iss` `https://{domain}/` (with its trailing slash), keys
 * at `https://{domain}/.well-known/jwks.json`, `aud` the API identifier. Granted scopes are `scope`
 * merged with the RBAC `permissions` array (API setting "Add Permissions in the Access Token"), so
 * `requireScopes('read:messages')` accepts either; the client is `azp` (or `client_id` in the
 * RFC 9068 token dialect). For Organizations, take the tenant from `org_id`
 * (`tenant: { claim: 'org_id' }`).
 *
 * @example
 * ```ts
 * createGate({ issuers: auth0({ domain: 'acme.eu.auth0.com', audience: 'https://api.acme.com' }) })
 * ```
 * @throws TypeError when `domain` is not a host name or `audience` is missing.
 */
export function auth0(options: Auth0Options): IssuerOptions[] {
  const { domain, audience } = profileOptions(options, 'auth0', OPTIONS)
  const host = providerHost(domain, 'auth0(options): "domain"')
  const audiences = nonEmptyStrings(
    audience,
    'auth0(options): "audience"',
    "the API's Identifier from the Auth0 dashboard (Applications › APIs)",
  )
  const issuer = `https://${host}/`
  return [
    {
      issuer,
      jwksUri: `${issuer}.well-known/jwks.json`,
      audience: audiences,
      claims: { scopes: ['scope', 'permissions'], clientId: ['azp', 'client_id'] },
    },
  ]
}
