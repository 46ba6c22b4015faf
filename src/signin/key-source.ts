/**
 * Where sign-in's key ring comes from: read on the first request that needs it (not at
 * construction, so that a secret mounted after start-up is found), and read again every
 * {@link KEY_RING_REREAD_MS} when it comes from a function or the environment.
 *
 * @module
 */
import { resolveSecret } from '../client/secrets.js'
import type { Emit } from '../events.js'
import { warnOnce } from '../warnings.js'
import { keyRingWarning } from './config-warnings.js'
import { SignInError } from './errors.js'
import type { SignInEvent } from './events.js'
import { createKeyRing, type KeyRing, parseKeyRingText, type SignInKey } from './key-ring.js'
import type { NormalizedSignInOptions } from './options.js'

/** How often a key ring given as a function or `fromEnv()` is read again: 5 minutes. */
export const KEY_RING_REREAD_MS = 300_000

/**
 * The key ring of one sign-in, as a function each route calls. A ring that cannot be read is a
 * 503 (`keys_unavailable`) and is not kept, so that the next request tries again.
 */
export function createKeyRingSource(
  settings: NormalizedSignInOptions,
  issuer: string,
  emit: Emit<SignInEvent>,
): () => Promise<KeyRing> {
  const { client, now } = settings
  let ring: Promise<KeyRing> | undefined
  let ringReadAt = 0

  const readRing = async (): Promise<KeyRing> => {
    const value = await resolveSecret<string | readonly SignInKey[]>(
      settings.keys,
      { clientId: client.clientId, issuer, option: 'keys' },
      (input): input is string | readonly SignInKey[] =>
        typeof input === 'string' || Array.isArray(input),
    )
    return createKeyRing(typeof value === 'string' ? parseKeyRingText(value) : value)
  }
  // A ring from a function or the environment is read again every KEY_RING_REREAD_MS, so that
  // a rotation reaches running processes; a ring given as an array never changes.
  const rereadRing = !Array.isArray(settings.keys)

  return function keyRing(): Promise<KeyRing> {
    if (ring !== undefined && rereadRing && now() - ringReadAt >= KEY_RING_REREAD_MS) {
      const previous = ring
      ringReadAt = now()
      // A failed re-read keeps the ring in use (a secrets manager's hiccup signs nobody out);
      // the next re-read is due KEY_RING_REREAD_MS later.
      ring = readRing().catch(() => previous)
    }
    if (ring === undefined) {
      ringReadAt = now()
      ring = readRing().catch((error: unknown) => {
        // Not kept: a key mounted a moment later is read by the next request.
        ring = undefined
        if (emit === undefined) warnOnce({ ...keyRingWarning(settings), now })
        throw new SignInError('ERR_SIGNIN_UNAVAILABLE', 'keys_unavailable', error)
      })
    }
    return ring
  }
}
