/**
 * Where a key set is fetched from: its configured `jwksUri`, or the one the issuer's OpenID
 * discovery document names (found on the first fetch, then kept).
 *
 * @module
 */
import { FetchFailure, fetchJSON, urlForOperators } from './fetch-json.js'
import { keyUrlProblem } from './issuers.js'
import type { KeySetIssuer, NormalizedJWKSOptions } from './jwks-types.js'

export class KeySource {
  /** The JWKS URI: configured, or found through discovery (then set by the first fetch). */
  private jwksUri: string | undefined
  private readonly discoveryUri: string | undefined
  private readonly issuer: string
  private readonly options: NormalizedJWKSOptions

  constructor(issuer: KeySetIssuer, options: NormalizedJWKSOptions) {
    this.issuer = issuer.issuer
    this.jwksUri = issuer.jwksUri
    this.discoveryUri = issuer.discovery
      ? `${issuer.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`
      : undefined
    this.options = options
  }

  /** The JWKS URI as operators may read it (query shown as `?…`). */
  get urlForOperators(): string {
    return urlForOperators(this.jwksUri as string)
  }

  /** The key set document (discovering the JWKS URI first when needed). */
  async fetch(signal: AbortSignal): Promise<unknown> {
    if (this.jwksUri === undefined && this.discoveryUri !== undefined) {
      this.jwksUri = await this.discover(this.discoveryUri, signal)
    }
    return this.fetchJSON(this.jwksUri as string, signal)
  }

  private async discover(uri: string, signal: AbortSignal): Promise<string> {
    let document: unknown
    const place = { url: urlForOperators(uri) }
    try {
      document = await this.fetchJSON(uri, signal)
    } catch (error) {
      throw new FetchFailure('discovery', error, {
        status: error instanceof FetchFailure ? error.status : undefined,
        ...place,
      })
    }
    const metadata = document as { issuer?: unknown; jwks_uri?: unknown } | null
    // OpenID Connect Discovery §4.3: the document must name exactly the issuer it was fetched for.
    if (metadata === null || typeof metadata !== 'object' || metadata.issuer !== this.issuer) {
      throw new FetchFailure('discovery', undefined, place)
    }
    // The discovered URL obeys the same transport rule as a configured one.
    const jwksUri = metadata.jwks_uri
    if (
      typeof jwksUri !== 'string' ||
      keyUrlProblem(jwksUri, this.options.allowInsecureHttp) !== undefined
    ) {
      throw new FetchFailure('discovery', undefined, place)
    }
    return jwksUri
  }

  private fetchJSON(uri: string, signal: AbortSignal): Promise<unknown> {
    return fetchJSON(uri, { ...this.options, signal })
  }
}
