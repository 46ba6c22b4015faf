/**
 * Outgoing requests with a token: `fetch` with `Authorization: Bearer` from a token source, and
 * one retry with a fresh token when the resource server refuses the token itself (401 with
 * `error="invalid_token"`, RFC 6750 §3.1), for example after the provider rotated its keys.
 *
 * @module
 */
import type { TokenParameters } from './parameters.js'
import { stepUpChallengeOf } from './step-up.js'
import type { TokenSource } from './token-source.js'

/** Options of {@link createAuthorizedFetch}. */
export interface AuthorizedFetchOptions {
  /** Parameters for the source's `get()` (for example the product's `resource`). Default: the source's. */
  readonly parameters?: TokenParameters
  /** The fetch to wrap. Default: the global `fetch`. */
  readonly fetch?: typeof globalThis.fetch
}

type FetchInput = Parameters<typeof globalThis.fetch>[0]

// RFC 6750 §3: the error attribute of a Bearer challenge, quoted or not.
const INVALID_TOKEN = /(?:^|[\s,])error\s*=\s*"?invalid_token"?(?:$|[\s,])/i

/** `true` when `body` can be sent a second time (not a one-shot stream). */
function replayable(input: FetchInput, body: RequestInit['body']): boolean {
  if (input instanceof Request && input.body !== null) return false
  return !(body instanceof ReadableStream)
}

/**
 * A `fetch` that sends a token from `source`. A 401 whose `WWW-Authenticate` says
 * `error="invalid_token"` makes the source drop that token and the request is sent once more with
 * a new one (not for a one-shot stream body). A 401 whose challenge says
 * `error="insufficient_user_authentication"` (RFC 9470 step-up) rejects with a
 * `StepUpRequiredError` carrying its `acrValues` and `maxAge`: only a new sign-in of the
 * user helps, not a new token. Any other answer is returned as it is.
 *
 * @example
 * ```ts
 * const officeFetch = createAuthorizedFetch(office)
 * const response = await officeFetch('https://office.example.com/api/namespaces', {
 *   headers: { Accept: 'application/json' },
 * })
 * ```
 * @throws TokenSourceError when no token can be obtained (the request is not sent).
 * @throws StepUpRequiredError when the resource server asks for a stronger or more recent sign-in.
 */
export function createAuthorizedFetch(
  source: TokenSource,
  options: AuthorizedFetchOptions = {},
): typeof globalThis.fetch {
  const send = options.fetch ?? globalThis.fetch
  const parameters = options.parameters
  const withToken = (input: FetchInput, init: RequestInit | undefined, token: string) => {
    const headers = new Headers(
      init?.headers ?? (input instanceof Request ? input.headers : undefined),
    )
    headers.set('Authorization', `Bearer ${token}`)
    return send(input, { ...init, headers })
  }
  return async function authorizedFetch(input: FetchInput, init?: RequestInit) {
    const token = await source.get(parameters)
    const response = await withToken(input, init, token)
    const stepUp = stepUpChallengeOf(response)
    if (stepUp !== undefined) {
      await response.body?.cancel().catch(() => undefined)
      throw stepUp
    }
    if (
      response.status !== 401 ||
      !INVALID_TOKEN.test(response.headers.get('www-authenticate') ?? '') ||
      !replayable(input, init?.body) ||
      !source.invalidate(token, parameters)
    ) {
      return response
    }
    await response.body?.cancel().catch(() => undefined)
    return withToken(input, init, await source.get(parameters))
  } as typeof globalThis.fetch
}
