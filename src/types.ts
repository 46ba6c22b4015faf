/**
 * Types shared across the core and the adapters. Types only: no values live here.
 *
 * @module
 */
import type { X509Certificate } from 'node:crypto'

/** Request headers as Node (and so Express and Koa) expose them, lower-cased names. */
export type HeadersLike = Readonly<Record<string, string | string[] | undefined>>

/** The framework-neutral view of a request that adapters hand to the gate. */
export interface RequestLike {
  /** Lower-cased header map (`req.headers`, `ctx.headers`). */
  readonly headers: HeadersLike
  /**
   * Node's `rawHeaders` (name, value, name, value, …). Node keeps only the first of several
   * `Authorization` fields in `headers`; the raw list lets the gate refuse a repeated field.
   */
  readonly rawHeaders?: readonly string[] | undefined
  readonly method?: string | undefined
  /** Whether the connection is TLS: the scheme of a DPoP proof's `htu` when no public base URL is set. */
  readonly secure?: boolean | undefined
  /** Path and query as received (`req.originalUrl`, `ctx.originalUrl`). */
  readonly url?: string | undefined
  /**
   * The parsed body when the application parsed it before the gate; used only to refuse a token
   * sent in the body as well as in the header (RFC 6750 §2.2, §3.1). tollgate never reads bodies.
   */
  readonly body?: unknown
  /**
   * The connection the request came on (Node's `req.socket`, which the Node adapters pass): its
   * peer address, and on TLS the client certificate. Read only by certificate-bound tokens (the
   * `mtls` option, RFC 8705).
   */
  readonly socket?: PeerSocket | undefined
  /**
   * The scopes the route requires, space-separated, named in the `scope` of a refusal's challenge
   * (RFC 6750 §3, MCP's "scope" SHOULD). The adapters' guards set it when they run the gate; without
   * it, the resource metadata's `scopes_supported` is named when configured.
   */
  readonly requiredScope?: string | undefined
}

/**
 * What the gate reads of a connection: Node's `net.Socket` and `tls.TLSSocket` fit as they are.
 * A host without Node sockets builds one: the proxy's address, or the TLS client certificate.
 */
export interface PeerSocket {
  /** The peer's IP address (`127.0.0.1`, `::ffff:10.0.0.5`): compared with `mtls.trustedProxies`. */
  readonly remoteAddress?: string | undefined
  /** The client certificate of a TLS connection, `undefined` when the client sent none. */
  getPeerX509Certificate?(): X509Certificate | undefined
  /**
   * The TLS version (`'TLSv1.3'`): the certificate of a TLS 1.3 connection, which cannot
   * renegotiate, is read once per connection.
   */
  getProtocol?(): string | null
}

/** The JOSE header of a verified token, as far as tollgate reads it. */
export interface TokenHeader {
  readonly alg: string
  readonly kid?: string
  readonly typ?: string
  readonly [parameter: string]: unknown
}

/** Claims of a verified token. Registered claims are typed; everything else is `unknown`. */
export interface TokenClaims {
  readonly iss: string
  readonly exp: number
  readonly aud?: string | readonly string[]
  readonly sub?: string
  readonly iat?: number
  readonly nbf?: number
  readonly jti?: string
  readonly azp?: string
  readonly client_id?: string
  readonly scope?: string
  readonly [claim: string]: unknown
}

/** Roles as Keycloak puts them in access tokens. */
export interface TokenRoles {
  /** `realm_access.roles`. */
  readonly realm: readonly string[]
  /** `resource_access[client].roles`, by client id. */
  readonly clients: Readonly<Record<string, readonly string[]>>
}

/**
 * A party acting for the token's subject (RFC 8693 §4.1 `act`): the service that exchanged the
 * user's token, named by the issuer. The actors before it are nested (`actor.actor`).
 */
export interface Actor {
  /** `act.sub`. */
  readonly subject: string | undefined
  /** `act.client_id`. */
  readonly clientId: string | undefined
  /** `act.iss`, when the actor is named by another issuer than the token's. */
  readonly issuer: string | undefined
  /** The members of this `act` claim, without the nested `act`. */
  readonly claims: Readonly<Record<string, unknown>>
  /** The actor before this one in the chain (the nested `act`), if any. */
  readonly actor: Actor | undefined
}

/** Where `auth.tokenFor()` asks for a token: a product's identifier, or the exchange's parameters. */
export interface TokenForTarget {
  /** RFC 8707 / RFC 8693 `resource`. */
  readonly resource?: string | readonly string[]
  /** RFC 8693 `audience` (Keycloak's client id of the target). */
  readonly audience?: string
  /** The scope of the new token: the minimum the call needs. */
  readonly scope?: string | readonly string[]
  /** RFC 8693 `requested_token_type`. */
  readonly requestedTokenType?: string
}

/**
 * What the gate knows about an admitted request: on `req.auth` (Express) and `ctx.state.auth`
 * (Koa). Every field comes from a token whose signature, issuer, audience and times were verified.
 */
export interface Admission {
  /**
   * The compact JWS, as received. Treat it as a secret: never log it. Not enumerable, so that
   * `JSON.stringify(auth)`, `util.inspect(auth)` (what `console.log` and loggers print), spreads
   * and `Object.keys` leave it out; read it as `auth.token` where it is needed (to call another
   * API on the user's behalf).
   */
  readonly token: string
  readonly header: TokenHeader
  readonly claims: TokenClaims
  /** The configured issuer the token was verified against (equal to `claims.iss`). */
  readonly issuer: string
  /** The Keycloak realm of the issuer, when the issuer URL has one (`…/realms/{realm}`). */
  readonly realm: string | undefined
  readonly subject: string | undefined
  /** The OAuth client the token was issued to: `azp`, else `client_id`. */
  readonly clientId: string | undefined
  /** Granted scopes, from `scope` (space-separated) or `scp` (array or string). */
  readonly scopes: readonly string[]
  readonly roles: TokenRoles
  /** The tenant resolved from the verified claims, when tenant resolution is configured. */
  readonly tenant: string | undefined
  /** The tenant's plan, when plans are configured. */
  readonly plan: string | undefined
  /**
   * Who acts for the subject (the token's `act` claim, RFC 8693 §4.1), with the actors before it
   * nested; `undefined` when the token has no `act` claim: a user's own token, or a service's own
   * (Client Credentials) token, which acts for no user. See the gate's `delegation`.
   */
  readonly actor: Actor | undefined
  /**
   * A token for another product on behalf of this request's user: the request's own bearer token
   * exchanged (RFC 8693) through the gate's `delegation.exchange`, cached per token, target and
   * scope. A string is the product's identifier (`'https://office.example.com'`), sent as the
   * exchanger's profile sends targets. Not enumerable, like `token`.
   *
   * Rejects with a `TokenSourceError`: `ERR_EXCHANGE_NOT_POSSIBLE` when the gate has no exchanger
   * or the token is DPoP-bound (`cnf.jkt`: this service does not hold the client's key, and
   * exchanging a bound token into a bearer one would undo the binding), else the exchanger's.
   */
  tokenFor(target: string | TokenForTarget): Promise<string>
}

/** What `gate.check()` resolves to when the request may proceed. */
export interface CheckResult {
  /** `undefined` when authentication is optional and no credentials were sent, or `skip` matched. */
  readonly auth: Admission | undefined
  /** Response headers to add to the eventual response (rate-limit fields). */
  readonly headers: Readonly<Record<string, string>>
}
