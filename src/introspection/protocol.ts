/**
 * The provider's side of introspection, through oauth4webapi (openid-client's protocol layer):
 * discovery of the endpoint, the authenticated request (RFC 7662 §2.1), the response checks
 * (`processIntrospectionResponse`: `active` a boolean; for RFC 9701 JWT responses `typ`, `iss`,
 * `aud` and times) and the JWT response's signature against the issuer's keys
 * (`validateApplicationLevelSignature`). Nothing here is parsed or verified by hand. Loaded only
 * by gates that introspect.
 *
 * @module
 */
import * as oauth from 'oauth4webapi'

import { clientAuthenticationOf } from '../client/endpoint.js'
import type { IntrospectionFailureReason } from '../events.js'
import type { JWSAlgorithm } from '../token/algorithms.js'
import { keyUrlProblem } from '../token/issuers.js'
import { redactUrl } from '../validate.js'
import { cappedFetch, isTooLarge } from './capped-fetch.js'
import { endpointProblem, type NormalizedIntrospection } from './options.js'

/** What signed answers (RFC 9701) are verified with: the gate's own rules for JWT keys. */
export interface AnswerKeyRules {
  /** The gate's algorithm allow-list (`algorithms`). */
  readonly algorithms: readonly JWSAlgorithm[]
  /** The gate's `jwks.allowInsecureHttp`: whether keys may come over plain http off loopback. */
  readonly allowInsecureHttp: boolean
}

/** A call that did not yield a trustworthy answer: the gate answers 503, never 401. */
export class IntrospectionFailure extends Error {
  readonly reason: IntrospectionFailureReason
  readonly status: number | undefined
  readonly url: string | undefined
  constructor(
    reason: IntrospectionFailureReason,
    message: string,
    details: { status?: number; url?: string; cause?: unknown } = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause })
    this.name = 'IntrospectionFailure'
    this.reason = reason
    this.status = details.status
    this.url = details.url === undefined ? undefined : redactUrl(details.url)
  }
}

/** The introspection response members the gate reads (RFC 7662 §2.2), as oauth4webapi returns them. */
export type IntrospectionResponse = oauth.IntrospectionResponse

const JWT_RESPONSE = 'application/token-introspection+jwt'

/** The media type of a response, without parameters. */
function mediaType(response: Response): string | undefined {
  return response.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase()
}

/** The protocol state of one introspecting issuer: its server metadata, found once. */
export class IntrospectionEndpoint {
  readonly settings: NormalizedIntrospection
  private server: Promise<oauth.AuthorizationServer> | undefined
  /** The endpoint in use, once known (given, or discovered). */
  url: string | undefined

  /** Aborted by the gate's `close()`: calls under way end, and none starts. */
  private readonly stopped: AbortSignal

  private readonly keyRules: AnswerKeyRules
  private readonly fetch: typeof globalThis.fetch

  constructor(settings: NormalizedIntrospection, stopped: AbortSignal, keyRules: AnswerKeyRules) {
    this.settings = settings
    this.url = settings.endpoint
    this.stopped = stopped
    this.keyRules = keyRules
    this.fetch = cappedFetch(settings.fetch, settings.maxBodyBytes)
  }

  /** A call's deadline: `timeoutMs`, or the gate's `close()`, whichever comes first. */
  private deadline(): AbortSignal {
    return AbortSignal.any([AbortSignal.timeout(this.settings.timeoutMs), this.stopped])
  }

  /** The configured fetch, typed as whichever request's `customFetch` it is given to. */
  private fetcher<F>(): F {
    return this.fetch as unknown as F
  }

  private insecure(url: string): boolean {
    return new URL(url).protocol === 'http:'
  }

  /** The server metadata: given, or from discovery (one at a time; a failed one is retried next call). */
  metadata(): Promise<oauth.AuthorizationServer> {
    this.server ??= this.resolve().catch((error: unknown) => {
      this.server = undefined
      throw error
    })
    return this.server
  }

  private async resolve(): Promise<oauth.AuthorizationServer> {
    const { settings } = this
    if (!settings.discovery) {
      return {
        issuer: settings.issuer,
        introspection_endpoint: settings.endpoint as string,
        ...(settings.jwksUri === undefined ? {} : { jwks_uri: settings.jwksUri }),
        introspection_signing_alg_values_supported: this.algorithms(),
      }
    }
    const issuer = new URL(settings.issuer)
    let metadata: oauth.AuthorizationServer
    try {
      const response = await oauth.discoveryRequest(issuer, {
        algorithm: 'oidc',
        [oauth.customFetch]: this.fetcher(),
        [oauth.allowInsecureRequests]: this.insecure(settings.issuer),
        signal: this.deadline(),
      })
      metadata = await oauth.processDiscoveryResponse(issuer, response)
    } catch (error) {
      throw new IntrospectionFailure(
        isTooLarge(error) ? 'too_large' : isTimeout(error) ? 'timeout' : 'discovery',
        `discovery of ${redactUrl(settings.issuer)} failed`,
        { cause: error, url: `${settings.issuer}/.well-known/openid-configuration` },
      )
    }
    const endpoint = settings.endpoint ?? metadata.introspection_endpoint
    if (typeof endpoint !== 'string') {
      throw new IntrospectionFailure(
        'discovery',
        `the discovery document of ${redactUrl(settings.issuer)} names no introspection_endpoint: give introspection.endpoint`,
      )
    }
    // A discovered endpoint obeys the rule a configured one does.
    const problem = endpointProblem(endpoint, settings.allowInsecureHttp)
    if (problem !== undefined) {
      throw new IntrospectionFailure(
        'insecure_endpoint',
        `the introspection_endpoint discovered for ${redactUrl(settings.issuer)} ${problem}`,
        { url: endpoint },
      )
    }
    // The keys of signed answers obey the rule the JWT path's keys do (a configured jwksUri was
    // checked at construction).
    const jwksUri = settings.jwksUri ?? metadata.jwks_uri
    if (
      settings.jwtResponse &&
      typeof jwksUri === 'string' &&
      keyUrlProblem(jwksUri, this.keyRules.allowInsecureHttp) !== undefined
    ) {
      throw new IntrospectionFailure(
        'insecure_endpoint',
        `the jwks_uri discovered for ${redactUrl(settings.issuer)} ${keyUrlProblem(jwksUri, false)}: the keys of signed introspection answers could be swapped in transit`,
        { url: jwksUri },
      )
    }
    this.url = endpoint
    return {
      ...metadata,
      introspection_endpoint: endpoint,
      ...(settings.jwksUri === undefined ? {} : { jwks_uri: settings.jwksUri }),
      introspection_signing_alg_values_supported: this.algorithms(),
    }
  }

  /**
   * Signed answers (RFC 9701) are verified with the gate's algorithm allow-list, whatever the
   * provider's metadata advertises (oauth4webapi's own fallback, with none, is RS256 alone).
   */
  private algorithms(): string[] {
    return [...this.keyRules.algorithms]
  }

  /**
   * Introspects `token`. Resolves with the response (active or not); rejects with an
   * {@link IntrospectionFailure} when no trustworthy answer came within `timeoutMs`.
   */
  async introspect(token: string): Promise<IntrospectionResponse> {
    const { settings } = this
    const as = await this.metadata()
    const url = as.introspection_endpoint as string
    const client: oauth.Client = { client_id: settings.clientId }
    let clientAuth: oauth.ClientAuth
    try {
      // The token source's own authentication: the same secrets, `fromEnv()` and key handling.
      const asSource = {
        ...settings,
        server: { issuer: settings.issuer, tokenEndpoint: undefined, discovery: true },
      } as unknown as Parameters<typeof clientAuthenticationOf>[0]
      clientAuth = (await clientAuthenticationOf(asSource)) as unknown as oauth.ClientAuth
    } catch (error) {
      throw new IntrospectionFailure(
        'credentials',
        `the introspection credentials of client "${settings.clientId}" are unavailable: check ${settings.credentialSource}`,
        { cause: error },
      )
    }
    if (this.stopped.aborted) {
      throw new IntrospectionFailure('network', 'the gate was closed: no introspection call starts')
    }
    const signal = this.deadline()
    const insecure = this.insecure(url)
    let response: Response
    try {
      response = await oauth.introspectionRequest(as, client, clientAuth, token, {
        [oauth.customFetch]: this.fetcher(),
        [oauth.allowInsecureRequests]: insecure,
        additionalParameters: { token_type_hint: 'access_token' },
        requestJwtResponse: settings.jwtResponse,
        signal,
      })
    } catch (error) {
      throw new IntrospectionFailure(
        isTooLarge(error) ? 'too_large' : isTimeout(error) ? 'timeout' : 'network',
        `introspection at ${redactUrl(url)} failed`,
        { cause: error, url },
      )
    }
    if (response.status !== 200) {
      // Drain the body, so the connection can be reused; its content is not read.
      await response.body?.cancel().catch(() => undefined)
      throw new IntrospectionFailure(
        'status',
        `introspection at ${redactUrl(url)} answered HTTP ${response.status}${
          response.status === 401 || response.status === 400
            ? `: check the credentials of client "${settings.clientId}"`
            : ''
        }`,
        { status: response.status, url },
      )
    }
    const isJwt = mediaType(response) === JWT_RESPONSE
    if (settings.jwtResponse && !isJwt) {
      await response.body?.cancel().catch(() => undefined)
      throw new IntrospectionFailure(
        'invalid_response',
        `introspection at ${redactUrl(url)} answered without a signed JWT response (RFC 9701), which jwtResponse: true requires`,
        { url },
      )
    }
    let result: IntrospectionResponse
    try {
      result = await oauth.processIntrospectionResponse(as, client, response)
    } catch (error) {
      throw new IntrospectionFailure(
        isTimeout(error) ? 'timeout' : 'invalid_response',
        `introspection at ${redactUrl(url)} answered a response that does not hold (${describe(error)})`,
        { cause: reduced(error), url },
      )
    }
    if (isJwt) {
      try {
        await oauth.validateApplicationLevelSignature(as, response, {
          [oauth.customFetch]: this.fetcher(),
          [oauth.allowInsecureRequests]: as.jwks_uri?.startsWith('http:') === true,
          signal,
        })
      } catch (error) {
        throw new IntrospectionFailure(
          isTooLarge(error) ? 'too_large' : isTimeout(error) ? 'timeout' : 'signature',
          `the JWT introspection response of ${redactUrl(url)} is not signed by a key of ${redactUrl(settings.issuer)}`,
          { cause: reduced(error), url },
        )
      }
    }
    return result
  }
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')
}

/** oauth4webapi's code and message, never the response body it may carry in `cause`. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return typeof error
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' ? `${code}: ${error.message}` : error.message
}

/** The library's error without its `cause` (which holds the response body, and so token facts). */
function reduced(error: unknown): unknown {
  if (!(error instanceof Error)) return error
  const copy = new Error(error.message)
  copy.name = error.name
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string') Object.assign(copy, { code })
  return copy
}
