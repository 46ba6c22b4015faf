/**
 * The ID token's algorithm, for sign-in: which ones are accepted (`idTokenAlgorithms`), the HMAC
 * check of one signed with the client secret (HS256/HS384/HS512, OpenID Connect Core §10.1;
 * openid-client verifies asymmetric signatures only), and the refusals that say which algorithm
 * and which option, keeping what openid-client said.
 *
 * @module
 */
import { compactVerify } from 'jose'

import { openidClientCause } from '../client/endpoint.js'
import { TokenSourceError } from '../client/errors.js'
import type { NormalizedTokenSourceOptions } from '../client/options.js'
import { resolveSecret } from '../client/secrets.js'
import { SignInError } from './errors.js'
import { ASYMMETRIC_ID_TOKEN_ALGORITHMS, HMAC_ID_TOKEN_ALGORITHMS } from './options.js'

/** Every algorithm `idTokenAlgorithms` can list: one outside it is no configuration's to accept. */
const LISTABLE_ID_TOKEN_ALGORITHMS: ReadonlySet<string> = new Set([
  ...ASYMMETRIC_ID_TOKEN_ALGORITHMS,
  ...HMAC_ID_TOKEN_ALGORITHMS,
])

/**
 * `false` for `none` and for names no JWS library signs with: an ID token in one is a hostile or
 * broken provider's answer, refused as such, never a configuration to change.
 */
export function isListableIdTokenAlgorithm(algorithm: string): boolean {
  return LISTABLE_ID_TOKEN_ALGORITHMS.has(algorithm)
}

/** Which ID token algorithms sign-in accepts (`idTokenAlgorithms`, validated). */
export interface IdTokenAlgorithms {
  readonly algorithms: readonly string[]
  /** HS256/HS384/HS512: verified with the client secret instead of the provider's keys. */
  readonly hmac: boolean
}

/** What the checks need: the client, its credential, and the accepted algorithms. */
export interface IdTokenContext {
  readonly clientId: string
  readonly issuer: string
  readonly credential: NormalizedTokenSourceOptions['credential']
  readonly idToken: IdTokenAlgorithms
}

/**
 * The HMAC of an ID token signed with HS256/HS384/HS512, keyed by the client secret's UTF-8
 * octets (OpenID Connect Core §10.1), verified by jose; nothing to do for asymmetric ones, which
 * openid-client verified against the provider's keys. openid-client has checked the claims and
 * that the `alg` is one of `idTokenAlgorithms` already.
 *
 * @throws TokenSourceError when the client secret cannot be read; jose's error when the
 * signature does not verify.
 */
export async function verifyHmac(
  context: IdTokenContext,
  token: string | undefined,
): Promise<void> {
  if (!context.idToken.hmac || token === undefined) return
  const { clientId, issuer } = context
  const secret = await resolveSecret<string>(
    context.credential as string,
    { clientId, issuer, option: 'clientSecret' },
    (value): value is string => typeof value === 'string',
  )
  await compactVerify(token, new TextEncoder().encode(secret), {
    algorithms: [...context.idToken.algorithms],
  })
}

/**
 * An ID token in an algorithm `idTokenAlgorithms` does not list: a configuration error, answered
 * 500 and never retried as an outage. The cause names the algorithm, the option, and keeps what
 * openid-client said (reduced: never the response).
 */
export function algorithmRefusal(
  context: IdTokenContext,
  error: unknown,
  algorithm: string,
): SignInError {
  const { clientId, issuer, idToken } = context
  const hmacHint = idToken.hmac
    ? ''
    : ' (HS256, HS384 and HS512 alone, and only with a clientSecret: OpenID Connect Core §10.1)'
  const said = openidClientCause(error)
  const words = said?.cause instanceof Error ? said.cause.message : (said?.message ?? 'refused')
  return new SignInError(
    'ERR_CLIENT_REFUSED',
    'id_token_algorithm',
    new TokenSourceError({
      code: 'ERR_TOKEN_RESPONSE_INVALID',
      retryable: false,
      clientId,
      issuer,
      message:
        `token endpoint of ${issuer} gave client "${clientId}" an ID token signed with ` +
        `${algorithm}, which sign-in does not accept (openid-client: ${words}): list it in the ` +
        `idTokenAlgorithms option (now ${idToken.algorithms.join(', ')})${hmacHint}, or have ` +
        "the provider sign this client's ID tokens with one of those",
      cause: said,
    }),
  )
}

/**
 * A refreshed ID token that is unsigned (`none`) or in an algorithm no configuration can accept:
 * an answer not to use, as one whose signature fails (the session stays; 503), never the
 * configuration error of {@link algorithmRefusal}.
 */
export function unusableIdToken(
  context: IdTokenContext,
  error: unknown,
  algorithm: string,
): TokenSourceError {
  const { clientId, issuer } = context
  return new TokenSourceError({
    code: 'ERR_TOKEN_RESPONSE_INVALID',
    retryable: false,
    clientId,
    issuer,
    message: `token endpoint of ${issuer} gave client "${clientId}" an ID token ${algorithm === 'none' ? 'that is unsigned (alg none)' : `signed with ${algorithm}, an algorithm sign-in does not support`}`,
    cause: openidClientCause(error),
  })
}

/** An HMAC-signed ID token whose signature does not verify with the client secret. */
export function hmacRefusal(context: IdTokenContext, error: unknown): TokenSourceError {
  if (error instanceof TokenSourceError) return error
  const { clientId, issuer, idToken } = context
  // jose's error by name and fixed message only.
  const cause = error instanceof Error ? new Error(error.message) : undefined
  if (cause !== undefined && error instanceof Error) cause.name = error.name
  return new TokenSourceError({
    code: 'ERR_TOKEN_RESPONSE_INVALID',
    retryable: false,
    clientId,
    issuer,
    message: `token endpoint of ${issuer} gave client "${clientId}" an ID token whose ${idToken.algorithms.join('/')} signature does not verify with the client secret`,
    cause,
  })
}
