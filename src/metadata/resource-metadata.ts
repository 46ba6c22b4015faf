/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728): the document a gate serves at
 * `/.well-known/oauth-protected-resource` (with the resource's path appended), built once from
 * the gate's configuration, and the URL its challenges point to (§5.1). Adapters only send it.
 *
 * @module
 */
import type { ErrorResponse } from '../errors.js'
import type { RequestLike } from '../types.js'
import { fail, isRecord, record } from '../validate.js'

/** What the gate publishes about itself (RFC 9728 §2). */
export interface ResourceMetadataOptions {
  /**
   * The resource identifier (RFC 9728 §2, RFC 8707 §2): the URL clients name when they ask for a
   * token, `https` (plain `http` only on loopback), without query or fragment. For an MCP server,
   * its endpoint URL; list it in `audience` so tokens are bound to it. Required.
   */
  readonly resource: string
  /** `scopes_supported`: the scopes clients may request for this resource. Default: left out. */
  readonly scopesSupported?: readonly string[]
  /**
   * `authorization_servers`: the issuers clients should get tokens for this resource from, a
   * non-empty subset of the configured issuers (exact `iss` values). Default: every configured
   * issuer, which publishes the whole list (all realms, all tenants) to anyone who asks.
   */
  readonly authorizationServers?: readonly string[]
  /**
   * More members (`resource_name`, `resource_documentation`…), JSON values. They may not redefine
   * the members tollgate derives from the configuration.
   */
  readonly extra?: Readonly<Record<string, unknown>>
}

/** {@link ResourceMetadataOptions} validated. */
export interface NormalizedResourceMetadataOptions {
  readonly resource: string
  readonly scopesSupported: readonly string[] | undefined
  readonly authorizationServers: readonly string[] | undefined
  readonly extra: Readonly<Record<string, unknown>>
}

/** A gate's metadata: where it is served, and the answer. */
export interface ResourceMetadata {
  /** The metadata URL, as sent in `resource_metadata` (RFC 9728 §5.1). */
  readonly url: string
  /** The path the document is served at. */
  readonly path: string
  /** The JSON document. */
  readonly document: Readonly<Record<string, unknown>>
  /** The answer to a GET or HEAD of {@link ResourceMetadata.path}; `undefined` for any other request. */
  respond(request: RequestLike): ErrorResponse | undefined
}

const OPTION_KEYS = ['resource', 'scopesSupported', 'authorizationServers', 'extra']
const WELL_KNOWN = '/.well-known/oauth-protected-resource'
const DERIVED_MEMBERS = new Set([
  'resource',
  'authorization_servers',
  'scopes_supported',
  'bearer_methods_supported',
  'dpop_signing_alg_values_supported',
  'dpop_bound_access_tokens_required',
  'tls_client_certificate_bound_access_tokens',
])
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]'])

/**
 * Validates {@link ResourceMetadataOptions} once, at construction.
 *
 * @throws TypeError naming the option, what it must be and a safe summary of what it got.
 */
export function normalizeResourceMetadataOptions(
  input: unknown,
): NormalizedResourceMetadataOptions | undefined {
  if (input === undefined) return undefined
  const options = record(input, 'resourceMetadata', OPTION_KEYS) as Partial<ResourceMetadataOptions>
  const resource = options.resource
  let url: URL | undefined
  try {
    url = typeof resource === 'string' ? new URL(resource) : undefined
  } catch {}
  // RFC 9728 §2 and RFC 8707 §2: an https URL without fragment; a query is refused here too,
  // since the well-known path is inserted before it and clients disagree on keeping it.
  if (
    url === undefined ||
    !(url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.has(url.hostname))) ||
    url.username !== '' ||
    url.password !== '' ||
    url.search !== '' ||
    url.hash !== '' ||
    (resource as string).includes('#') ||
    (resource as string).includes('?')
  ) {
    fail(
      'resourceMetadata.resource',
      'must be an https URL (http only on loopback) without credentials, query or fragment',
      resource,
      { show: 'url' },
    )
  }
  const scopes = options.scopesSupported
  if (
    scopes !== undefined &&
    (!Array.isArray(scopes) || scopes.some((scope) => typeof scope !== 'string' || scope === ''))
  ) {
    fail('resourceMetadata.scopesSupported', 'must be an array of non-empty strings', scopes)
  }
  const servers = options.authorizationServers
  if (
    servers !== undefined &&
    (!Array.isArray(servers) ||
      servers.length === 0 ||
      servers.some((server) => typeof server !== 'string' || server === ''))
  ) {
    fail(
      'resourceMetadata.authorizationServers',
      'must be a non-empty array of configured issuers',
      servers,
    )
  }
  const extra = options.extra ?? {}
  if (!isRecord(extra)) fail('resourceMetadata.extra', 'must be an object', extra)
  for (const name of Object.keys(extra)) {
    if (DERIVED_MEMBERS.has(name)) {
      fail(`resourceMetadata.extra.${name}`, 'is derived from the gate options; set those instead')
    }
  }
  try {
    JSON.stringify(extra)
  } catch {
    fail('resourceMetadata.extra', 'must be JSON-serializable')
  }
  return Object.freeze({
    resource: resource as string,
    scopesSupported: scopes === undefined ? undefined : Object.freeze([...scopes]),
    authorizationServers: servers === undefined ? undefined : Object.freeze([...new Set(servers)]),
    extra: Object.freeze({ ...extra }),
  })
}

/** The well-known URL of `resource` (RFC 9728 §3.1): inserted between the host and the path. */
export function metadataUrlOf(resource: string): string {
  const url = new URL(resource)
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '')
  return `${url.origin}${WELL_KNOWN}${path}`
}

const RESPONSE_HEADERS = {
  'Content-Type': 'application/json; charset=utf-8',
  // Public configuration, the same for everyone: clients and caches may keep it for an hour.
  'Cache-Control': 'public, max-age=3600',
}

/**
 * Builds a gate's metadata document and its answer, once.
 *
 * @throws TypeError when `authorizationServers` names an issuer the gate does not trust.
 */
export function createResourceMetadata(
  options: NormalizedResourceMetadataOptions,
  context: {
    /** Issuer identifiers of the trusted issuers. */
    readonly authorizationServers: readonly string[]
    readonly dpop:
      | { readonly algorithms: readonly string[]; readonly required: boolean }
      | undefined
    /** Whether certificate-bound tokens (RFC 8705) are accepted: the `mtls` option is on. */
    readonly mtls?: boolean
  },
): ResourceMetadata {
  const url = metadataUrlOf(options.resource)
  const path = new URL(url).pathname
  const servers = options.authorizationServers ?? context.authorizationServers
  for (const server of servers) {
    // Sending clients to an issuer whose tokens the gate refuses would only produce 401s.
    if (!context.authorizationServers.includes(server)) {
      fail('resourceMetadata.authorizationServers', 'may only list configured issuers', server, {
        show: 'url',
      })
    }
  }
  const document: Record<string, unknown> = {
    resource: options.resource,
    authorization_servers: [...servers],
  }
  if (options.scopesSupported !== undefined) document.scopes_supported = options.scopesSupported
  // RFC 6750 §2.1 only: tollgate never reads tokens from bodies or queries. With DPoP required,
  // no bearer token is accepted at all, which RFC 9728 §2 says with the empty array.
  document.bearer_methods_supported = context.dpop?.required === true ? [] : ['header']
  if (context.dpop !== undefined) {
    document.dpop_signing_alg_values_supported = [...context.dpop.algorithms]
    document.dpop_bound_access_tokens_required = context.dpop.required
  }
  // RFC 9728 §2: support for mutual-TLS certificate-bound access tokens (RFC 8705).
  if (context.mtls === true) document.tls_client_certificate_bound_access_tokens = true
  Object.assign(document, options.extra)
  const body = JSON.stringify(document)
  const answer: ErrorResponse = { status: 200, headers: RESPONSE_HEADERS, body }

  return Object.freeze({
    url,
    path,
    document: Object.freeze(JSON.parse(body) as Record<string, unknown>),
    respond(request: RequestLike): ErrorResponse | undefined {
      const target = request.url
      if (target === undefined || !target.startsWith(path)) return undefined
      const rest = target.slice(path.length)
      if (rest !== '' && !rest.startsWith('?')) return undefined
      if (request.method !== 'GET' && request.method !== 'HEAD') return undefined
      return { status: 200, headers: { ...RESPONSE_HEADERS }, body: answer.body }
    },
  })
}
