/**
 * `okta()`: the issuer entry for an Okta custom authorization server.
 *
 * @module
 */
import type { IssuerOptions } from '../token/issuers.js'
import { describeValue } from '../validate.js'
import { nonEmptyStrings, profileOptions, providerHost } from './host.js'

/** Options of {@link okta}. */
export interface OktaOptions {
  /** The Okta org's domain, e.g. `acme.okta.com` (or its custom domain). */
  readonly domain: string
  /** The authorization server id (Security › API › Authorization Servers). Default `'default'`. */
  readonly authServer?: string
  /**
   * The authorization server's Audience setting. Default `'api://default'` (the default
   * server's). Every application of the org that gets a token from that server gets this
   * audience: give the gate `allowedClientIds` (checked against `cid`) to name the applications
   * this API serves, or use an authorization server of its own with its own audience.
   */
  readonly audience?: string | readonly string[]
}

const OPTIONS = ['domain', 'authServer', 'audience']
const AUTH_SERVER_ID = /^[A-Za-z0-9]{1,64}$/

/**
 * The issuer entry for an Okta custom authorization server: `iss`
 * `https://{domain}/oauth2/{authServer}`, keys at `{issuer}/v1/keys`. Okta writes scopes as the
 * array `scp` and the client as `cid`; both are read from there (`auth.clientId`,
 * `allowedClientIds` and events name `cid`). Groups, when a `groups` claim is added to the server,
 * are the roles (`requireRealmRoles('admins')`).
 *
 * The org authorization server (`https://{domain}` without `/oauth2/…`) is not offered: Okta
 * documents its access tokens as meant for Okta's own APIs, not to be validated by yours.
 *
 * @example
 * ```ts
 * createGate({ issuers: okta({ domain: 'acme.okta.com' }) })
 * ```
 * @throws TypeError when `domain` is not a host name or `authServer` not an authorization server id.
 */
export function okta(options: OktaOptions): IssuerOptions[] {
  const {
    domain,
    authServer = 'default',
    audience = 'api://default',
  } = profileOptions(options, 'okta', OPTIONS)
  const host = providerHost(domain, 'okta(options): "domain"')
  if (typeof authServer !== 'string' || !AUTH_SERVER_ID.test(authServer)) {
    throw new TypeError(
      `okta(options): "authServer" must be the authorization server's id, e.g. "default" or "aus1a2b3c4" (got ${describeValue(authServer, true)})`,
    )
  }
  const audiences = nonEmptyStrings(
    audience,
    'okta(options): "audience"',
    'the authorization server\'s Audience, e.g. "api://default"',
  )
  const issuer = `https://${host}/oauth2/${authServer}`
  return [
    {
      issuer,
      jwksUri: `${issuer}/v1/keys`,
      audience: audiences,
      claims: { scopes: ['scp'], roles: ['groups'], clientId: ['cid'] },
    },
  ]
}
