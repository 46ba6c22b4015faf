/**
 * The transmitter as the receiver knows it: its configuration document (SSF 1.0 §7.2, at
 * `/.well-known/ssf-configuration`) and the key set at its `jwks_uri`, an ordinary tollgate key
 * set (single flight, unknown-kid refetch with backoff, stale-if-error), so that SET keys rotate,
 * flood and fail as access-token keys do.
 *
 * @module
 */
import { DEFAULT_ALGORITHMS } from '../token/algorithms.js'
import { fetchJSON } from '../token/fetch-json.js'
import { IssuerKeys } from '../token/jwks.js'
import type { NormalizedSignalOptions } from './options.js'

/** The members of the configuration document the receiver uses (SSF 1.0 §7.1). */
export interface TransmitterConfiguration {
  readonly issuer: string
  readonly jwks_uri?: string
  readonly delivery_methods_supported?: readonly string[]
  readonly configuration_endpoint?: string
  readonly status_endpoint?: string
  readonly verification_endpoint?: string
  readonly [member: string]: unknown
}

/** The configuration could not be had, or is not the transmitter's: keys cannot be had either. */
export class ConfigurationUnavailable extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause })
    this.name = 'ConfigurationUnavailable'
  }
}

/** After a failed configuration fetch, none is tried again for this long (a flood of pushes). */
const RETRY_AFTER_MS = 5000

/** The transmitter's configuration and keys, fetched once and shared by every SET. */
export class Transmitter {
  private configuration: Promise<TransmitterConfiguration> | undefined
  private keys: IssuerKeys | undefined
  private failedAt = Number.NEGATIVE_INFINITY

  private readonly options: NormalizedSignalOptions

  constructor(options: NormalizedSignalOptions) {
    this.options = options
  }

  /**
   * The configuration document (SSF 1.0 §7.2), fetched once; its `issuer` must be the
   * transmitter's exactly (§7.2.1: else it is an impostor's).
   */
  config(): Promise<TransmitterConfiguration> {
    if (this.configuration !== undefined) return this.configuration
    const { configurationUrl, issuer, timeoutMs, fetch } = this.options
    if (Date.now() - this.failedAt < RETRY_AFTER_MS) {
      return Promise.reject(new ConfigurationUnavailable('transmitter configuration unavailable'))
    }
    const pending = (async () => {
      let document: unknown
      try {
        document = await fetchJSON(configurationUrl, { fetch, timeoutMs, maxBodyBytes: 65_536 })
      } catch (error) {
        throw new ConfigurationUnavailable('transmitter configuration unavailable', error)
      }
      if (
        typeof document !== 'object' ||
        document === null ||
        (document as { issuer?: unknown }).issuer !== issuer
      ) {
        throw new ConfigurationUnavailable('transmitter configuration names another issuer')
      }
      return document as TransmitterConfiguration
    })()
    this.configuration = pending
    pending.catch(() => {
      this.configuration = undefined
      this.failedAt = Date.now()
    })
    return pending
  }

  /** The transmitter's key set, at `transmitter.jwksUri` or the configuration's `jwks_uri`. */
  async keySet(): Promise<IssuerKeys> {
    if (this.keys !== undefined) return this.keys
    const { options } = this
    const jwksUri = options.jwksUri ?? (await this.config()).jwks_uri
    if (typeof jwksUri !== 'string') {
      throw new ConfigurationUnavailable('transmitter configuration has no jwks_uri')
    }
    this.keys ??= new IssuerKeys(
      { issuer: options.issuer, jwksUri, discovery: false },
      DEFAULT_ALGORITHMS,
      {
        timeoutMs: options.timeoutMs,
        cooldownMs: 30_000,
        minCooldownMs: 500,
        maxAgeMs: 600_000,
        staleIfErrorMs: 3_600_000,
        maxBodyBytes: 262_144,
        allowInsecureHttp: options.allowInsecureHttp,
        fetch: options.fetch,
      },
      { emit: undefined, onKeysRetired: undefined },
    )
    return this.keys
  }

  close(): void {
    this.keys?.close()
  }
}
