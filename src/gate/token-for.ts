/**
 * `auth.tokenFor(target)`: the admitted request's own bearer token exchanged for another product
 * through the gate's `delegation.exchange`. Built once per verified token (its verdict is shared by
 * every request presenting it), so a cached exchange costs a map lookup.
 *
 * @module
 */

import { TokenSourceError } from '../client/errors.js'
import { type KnownSubject, knownSubjectExchanger } from '../client/exchange-registry.js'
import type { Admission, TokenClaims } from '../types.js'
import type { NormalizedDelegationOptions } from './actors.js'

/** Makes the `tokenFor` of one verified token. */
export type TokenForFactory = (
  token: string,
  claims: TokenClaims,
  issuer: string,
) => Admission['tokenFor']

function notPossible(message: string, issuer: string, clientId: string): TokenSourceError {
  return new TokenSourceError({
    code: 'ERR_EXCHANGE_NOT_POSSIBLE',
    message,
    retryable: false,
    clientId,
    issuer,
  })
}

/**
 * A sender-constrained token (RFC 9449 `cnf.jkt`, RFC 8705 `cnf.x5t#S256`) is bound to a key this
 * service does not hold: exchanging it for a bearer token would undo the binding, and a provider
 * that checks it refuses the exchange anyway. `tokenFor` refuses it, without a request.
 */
function isBound(claims: TokenClaims): boolean {
  const cnf = claims['cnf']
  return typeof cnf === 'object' && cnf !== null
}

/** The `tokenFor` factory of a gate (with or without an exchanger). */
export function createTokenFor(
  delegation: NormalizedDelegationOptions | undefined,
): TokenForFactory {
  const exchanger = delegation?.exchange
  const fast = exchanger === undefined ? undefined : knownSubjectExchanger(exchanger)
  if (exchanger === undefined) {
    // Nothing of the token goes into the refusal but its issuer: one function per issuer, not a
    // closure per verified token.
    const refusals = new Map<string, Admission['tokenFor']>()
    return (_token, _claims, issuer) => {
      let refuse = refusals.get(issuer)
      if (refuse === undefined) {
        refuse = () =>
          Promise.reject(
            notPossible(
              'auth.tokenFor(): this gate has no exchanger: give the gate delegation: { exchange: createTokenExchange({ … }) }',
              issuer,
              '',
            ),
          )
        refusals.set(issuer, refuse)
      }
      return refuse
    }
  }
  return (token, claims, issuer) => {
    if (isBound(claims)) {
      return () =>
        Promise.reject(
          notPossible(
            'auth.tokenFor(): the request’s token is sender-constrained (cnf): it is bound to the client’s key, which this service does not hold, and is not exchanged',
            fast?.issuer ?? issuer,
            fast?.clientId ?? '',
          ),
        )
    }
    if (fast === undefined) return (target) => exchanger.exchange(token, target as never)
    const subject: KnownSubject = { token, exp: claims.exp, sub: claims.sub }
    return (target) => fast.exchangeFor(subject, target)
  }
}
