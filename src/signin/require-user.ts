/**
 * The guard of routes that need a user: a page request is sent to sign in, anything else gets a
 * 401 `login_required`.
 *
 * @module
 */
import { respond, type SignInDeps } from './deps.js'
import { SignInError } from './errors.js'
import type { SignInContext, SignInRequest, SignInResponse } from './internals.js'

/** `undefined` when the request has a user; otherwise a redirect to sign in (pages) or a 401. */
export function requireUser(
  deps: Pick<SignInDeps, 'loginPath' | 'errorResponse'>,
  context: SignInContext | undefined,
  request: SignInRequest,
): SignInResponse | undefined {
  if (context?.user !== undefined) return undefined
  const accept = request.headers['accept']
  const wantsPage = (Array.isArray(accept) ? accept.join(',') : (accept ?? '')).includes(
    'text/html',
  )
  if ((request.method === 'GET' || request.method === 'HEAD') && wantsPage) {
    return respond(302, { Location: deps.loginPath(request.url) })
  }
  return deps.errorResponse(new SignInError('ERR_SIGNIN_REQUIRED', 'no_session'))
}
