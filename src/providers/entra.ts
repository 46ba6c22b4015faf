/**
 * `entra()`: issuer entries for Microsoft Entra ID (Azure AD) tenants.
 *
 * @module
 */
import type { IssuerOptions } from '../token/issuers.js'
import { describeValue } from '../validate.js'
import { nonEmptyStrings, profileOptions } from './host.js'

/** Options of {@link entra}. */
export interface EntraOptions {
  /** The directory (tenant) id of a single-tenant app: a GUID. */
  readonly tenant?: string
  /**
   * The tenant ids a multi-tenant app accepts (its own and each customer's). Tokens of any other
   * tenant are refused, though the same keys sign them.
   */
  readonly tenants?: readonly string[]
  /**
   * What Entra puts in `aud`: the API's application (client) id for v2.0 tokens, usually its
   * Application ID URI (`api://…`) for v1.0 tokens. Both may be listed.
   */
  readonly audience: string | readonly string[]
  /**
   * The access token version the API's app registration asks for (manifest
   * `requestedAccessTokenVersion`, formerly `accessTokenAcceptedVersion`): `2`
   * (`iss` `https://login.microsoftonline.com/{tid}/v2.0`) or `1` (`iss`
   * `https://sts.windows.net/{tid}/`, Entra's default when the manifest says nothing). Default 2.
   */
  readonly version?: 1 | 2
}

const OPTIONS = ['tenant', 'tenants', 'audience', 'version']
const TENANT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const LOGIN = 'https://login.microsoftonline.com'

/**
 * One issuer entry per accepted tenant. Entra names the tenant in `iss`, so the tenant allow-list
 * is the issuer allow-list: `entra({ tenants })` is the `{tenantid}` issuer template of Entra's
 * `/common` discovery document, filled in with the tenants listed and nothing else. A multi-tenant
 * app's entries all take their keys from the common key set
 * (`https://login.microsoftonline.com/common/discovery/v2.0/keys`), which signs for every
 * tenant; a single tenant's from its own. Scopes are `scp` (delegated), app permissions of
 * app-only tokens are the roles (`roles`, checked with `requireRealmRoles()`), the client is
 * `azp` (v2.0) or `appid` (v1.0). A token whose `tid` is not the tenant of its `iss` is refused
 * (`token_type`, the detail names `tid`). For per-tenant limits, take the tenant from `tid`
 * (`tenant: { claim: 'tid' }`).
 *
 * @example
 * ```ts
 * createGate({ issuers: entra({ tenant: '72f988bf-86f1-41af-91ab-2d7cd011db47', audience: 'a1b2c3d4-…' }) })
 * ```
 * @throws TypeError when a tenant is not a tenant id (`common`, `organizations` and domain names
 *   are refused: tokens always name the GUID), or neither or both of `tenant` and `tenants` are given.
 */
export function entra(options: EntraOptions): IssuerOptions[] {
  const { tenant, tenants, audience, version = 2 } = profileOptions(options, 'entra', OPTIONS)
  if ((tenant === undefined) === (tenants === undefined)) {
    throw new TypeError(
      'entra(options): give "tenant" (single-tenant app) or "tenants" (the tenant ids a multi-tenant app accepts), not both or neither',
    )
  }
  const where = tenant === undefined ? 'entra(options): "tenants"' : 'entra(options): "tenant"'
  // Tokens write tenant ids in lower case; the same id listed in two cases is one tenant.
  const ids = [
    ...new Set(
      nonEmptyStrings(tenant ?? tenants, where, 'directory (tenant) ids').map((id) =>
        id.toLowerCase(),
      ),
    ),
  ]
  for (const id of ids) {
    if (!TENANT_ID.test(id)) {
      throw new TypeError(
        `${where} must list directory (tenant) ids, GUIDs as in the token's tid (got ${describeValue(id, true)}); ` +
          '"common", "organizations" and domain names never appear in a token\'s iss: list each accepted tenant id',
      )
    }
  }
  if (version !== 1 && version !== 2) {
    throw new TypeError(
      `entra(options): "version" must be 1 or 2 (got ${describeValue(version, true)})`,
    )
  }
  const audiences = nonEmptyStrings(
    audience,
    'entra(options): "audience"',
    "the API's application (client) id or Application ID URI",
  )
  const shared = tenant === undefined
  return ids.map((id) => {
    return {
      issuer: version === 2 ? `${LOGIN}/${id}/v2.0` : `https://sts.windows.net/${id}/`,
      jwksUri: `${LOGIN}/${shared ? 'common' : id}/discovery/v2.0/keys`,
      audience: audiences,
      // The common key set signs for every tenant: `tid` must name the tenant of `iss`, as
      // Microsoft's multi-tenant validation asks (the issuer template filled with `tid`).
      accessTokenClaims: { tid: id },
      claims: { scopes: ['scp'], roles: ['roles'], clientId: ['azp', 'appid'] },
    }
  })
}
