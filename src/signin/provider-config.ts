/**
 * The provider's configuration for openid-client, with its state in one place: the server
 * metadata (discovered once; a failed discovery is forgotten so the next request tries again) and
 * the provider's keys, carried from one `Configuration` to the next (each request builds its own,
 * so a secret from a function is read per request): one JWKS fetch, not one per sign-in.
 *
 * @module
 */
import * as oidc from 'openid-client'

import { clientAuthenticationOf, toTokenSourceError } from '../client/endpoint.js'
import type { NormalizedTokenSourceOptions } from '../client/options.js'
import type { IdTokenAlgorithms } from './id-token.js'
import { unavailable } from './provider-refusals.js'

export class ProviderConfiguration {
  /** The discovery under way or done. */
  private metadata: Promise<oidc.ServerMetadata> | undefined
  /** The provider's keys, as the last configuration held them. */
  private jwksCache: oidc.ExportedJWKSCache | undefined
  private readonly client: NormalizedTokenSourceOptions
  private readonly idToken: IdTokenAlgorithms
  /** The sign-in's `clockToleranceSeconds`, in place of openid-client's default of 30. */
  private readonly clockToleranceSeconds: number

  constructor(
    client: NormalizedTokenSourceOptions,
    idToken: IdTokenAlgorithms,
    clockToleranceSeconds: number,
  ) {
    this.client = client
    this.idToken = idToken
    this.clockToleranceSeconds = clockToleranceSeconds
  }

  /** Keeps the keys `config` fetched for the next configuration. */
  keepKeys(config: oidc.Configuration): void {
    this.jwksCache = oidc.getJwksCache(config) ?? this.jwksCache
  }

  serverMetadata(): Promise<oidc.ServerMetadata> {
    // One discovery at a time; a failed one is forgotten so the next request tries again.
    this.metadata ??= this.discover().catch((error: unknown) => {
      this.metadata = undefined
      throw error
    })
    return this.metadata
  }

  /** A configuration for one request (client authentication read now). */
  async configuration(): Promise<oidc.Configuration> {
    const { client, idToken } = this
    const config = new oidc.Configuration(
      // openid-client accepts an ID token in the algorithms the provider advertises, else RS256
      // only: the accepted ones are this option's instead, whatever the provider says.
      {
        ...(await this.serverMetadata()),
        id_token_signing_alg_values_supported: [...idToken.algorithms],
      },
      client.clientId,
      // openid-client tolerates 30 s on the ID token's times by default: a step-up's `max_age`
      // would then admit a sign-in `max_age` + 30 s old while the docs promise `max_age`. The
      // tolerance is the sign-in's own option instead (default 5 s, the gate's).
      { [oidc.clockTolerance]: this.clockToleranceSeconds },
      await clientAuthenticationOf(client),
    )
    config.timeout = client.timeoutMs / 1000
    if (client.fetch !== undefined)
      config[oidc.customFetch] = client.fetch as unknown as oidc.CustomFetch
    if (new URL(client.server.issuer).protocol === 'http:') oidc.allowInsecureRequests(config)
    // OIDC Core §3.1.3.7 lets a client skip the ID token's signature over TLS; we check it anyway,
    // against the provider's keys, so a compromised token endpoint path cannot name any user.
    // openid-client verifies asymmetric signatures only: an HMAC one is checked after it, here.
    if (!idToken.hmac && config.serverMetadata().jwks_uri !== undefined) {
      oidc.enableNonRepudiationChecks(config)
    }
    if (this.jwksCache !== undefined) oidc.setJwksCache(config, this.jwksCache)
    return config
  }

  private async discover(): Promise<oidc.ServerMetadata> {
    const { client } = this
    const { server, clientId } = client
    const issuer = server.issuer
    if (!server.discovery) {
      // A Keycloak realm: its endpoints sit at fixed paths under the issuer.
      const base = issuer.replace(/\/+$/, '')
      return {
        issuer,
        authorization_endpoint: `${base}/protocol/openid-connect/auth`,
        token_endpoint: server.tokenEndpoint,
        jwks_uri: `${base}/protocol/openid-connect/certs`,
        end_session_endpoint: `${base}/protocol/openid-connect/logout`,
      }
    }
    try {
      const config = await oidc.discovery(new URL(issuer), clientId, undefined, oidc.None(), {
        execute: new URL(issuer).protocol === 'http:' ? [oidc.allowInsecureRequests] : [],
        timeout: client.timeoutMs / 1000,
        ...(client.fetch === undefined
          ? {}
          : { [oidc.customFetch]: client.fetch as unknown as oidc.CustomFetch }),
      })
      return config.serverMetadata()
    } catch (error) {
      throw unavailable(
        'provider_unavailable',
        toTokenSourceError(error, { clientId, issuer }, client.credentialSource, 'discovery'),
      )
    }
  }
}
