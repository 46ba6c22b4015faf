/**
 * The request facts a gate's events carry (`accepted` and `rejected`): method, path without the
 * query, and the caller's request id. Read only when someone listens.
 *
 * @module
 */
import type { DecisionFacts } from '../events.js'
import type { RequestLike } from '../types.js'

/** Request facts for events, read only when someone listens. */
export function describeRequest(
  request: RequestLike | undefined,
): Pick<DecisionFacts, 'method' | 'path' | 'requestId'> {
  const url = request?.url
  const query = url === undefined ? -1 : url.indexOf('?')
  const requestId = request?.headers['x-request-id']
  return {
    method: request?.method,
    path: query === -1 ? url : url?.slice(0, query),
    requestId: typeof requestId === 'string' ? requestId : undefined,
  }
}
