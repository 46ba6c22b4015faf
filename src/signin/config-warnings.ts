/**
 * Configuration failures of sign-in, reported through `warnOnce` when the application gave no
 * `onEvent`: a key ring that cannot be read, a client the provider refuses, a client secret that
 * cannot be read, an ID token in an algorithm `idTokenAlgorithms` does not list. Without a listener these were silent (a 503 or a 500 and nothing in the logs).
 * Outages (provider, store) are not configuration and are not reported here.
 *
 * @module
 */
import { isTokenSourceError } from '../client/errors.js'
import type { ConfigurationWarning } from '../warnings.js'
import type { SignInError } from './errors.js'
import type { NormalizedSignInOptions } from './options.js'

const UNLESS_LISTENING = 'give onEvent to receive each failure as a signin_refused event'

/**
 * The warning for a key ring that cannot be read (unset, malformed, its function failing). Its
 * own function: the back-channel route's `keys_unavailable` is the provider's keys, an outage.
 */
export function keyRingWarning(
  settings: NormalizedSignInOptions,
): Omit<ConfigurationWarning, 'now'> {
  return {
    code: 'TOLLGATE_SIGNIN_KEYS_UNAVAILABLE',
    subject: settings.keysSource,
    message:
      `tollgate/signin: the key ring cannot be read from ${settings.keysSource}; sign-in ` +
      'answers 503 until it can. Set it (id=secret pairs, newest first, each secret at least ' +
      `32 random bytes), or ${UNLESS_LISTENING}`,
  }
}

/**
 * The warning for a refusal, or `undefined` when it is not a configuration failure. Names the
 * option and where its value comes from (`fromEnv('OFFICE_WEB_SECRET')`), never a value, a
 * token or a secret.
 */
export function configurationWarning(
  error: SignInError,
  settings: NormalizedSignInOptions,
): Omit<ConfigurationWarning, 'now'> | undefined {
  const { clientId, server, credentialSource } = settings.client
  if (error.reason === 'id_token_algorithm') {
    // The cause's message names the algorithm, the option and what openid-client said.
    const said = error.cause instanceof Error ? error.cause.message : ''
    return {
      code: 'TOLLGATE_SIGNIN_ID_TOKEN_ALGORITHM',
      subject: `${server.issuer} ${clientId}`,
      message: `tollgate/signin: ${said}; sign-in answers 500 until this changes, or ${UNLESS_LISTENING}`,
    }
  }
  if (error.code === 'ERR_CLIENT_REFUSED') {
    const cause = error.cause
    const answer = isTokenSourceError(cause)
      ? (cause.oauthError ?? (cause.status === undefined ? '' : `status ${cause.status}`))
      : ''
    return {
      code: 'TOLLGATE_SIGNIN_CLIENT_REFUSED',
      subject: `${server.issuer} ${clientId}`,
      message:
        `tollgate/signin: the token endpoint of ${server.issuer} refused client "${clientId}"` +
        `${answer === '' ? '' : ` (${answer})`} at the code exchange; sign-in answers 500 ` +
        `until this changes. Check the client id, the credential read from ${credentialSource}, ` +
        `and that the client may use the authorization code grant, or ${UNLESS_LISTENING}`,
    }
  }
  if (
    error.reason === 'provider_unavailable' &&
    isTokenSourceError(error.cause) &&
    error.cause.code === 'ERR_SECRET_UNAVAILABLE'
  ) {
    return {
      code: 'TOLLGATE_SIGNIN_SECRET_UNAVAILABLE',
      subject: credentialSource,
      message:
        `tollgate/signin: the client credential cannot be read from ${credentialSource}; ` +
        `sign-in answers 503 until it can. Set it, or ${UNLESS_LISTENING}`,
    }
  }
  return undefined
}
