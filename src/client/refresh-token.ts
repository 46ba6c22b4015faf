/**
 * The refresh token of a source that uses the refresh_token grant (RFC 6749 §6): requests run one
 * at a time, each with the latest refresh token, and a rotated one replaces the old one before the
 * next request can start, so a rotated-out token is never sent (a provider that detects reuse
 * revokes the whole grant, RFC 9700 §4.14.2).
 *
 * @module
 */
import { createHash } from 'node:crypto'

import type { GrantResult } from './endpoint.js'
import { isTokenSourceError, type TokenSourceError } from './errors.js'
import { resolveSecret, type SecretInput } from './secrets.js'

/** Runs refresh_token grants one at a time. */
export interface RefreshTokenHolder {
  /**
   * Runs `grant` with the current refresh token once every earlier grant has settled. A refresh
   * token the provider refused for good (`ERR_REFRESH_TOKEN_REFUSED`) is never sent again: while
   * the `refreshToken` option still yields it, `run` fails with that refusal without calling
   * `grant`; a new one (a function or variable now giving the token of a new authorization) is
   * taken up.
   */
  run(grant: (refreshToken: string) => Promise<GrantResult>): Promise<GrantResult>
}

/** How the holder hands a rotated refresh token to the application's `onRefreshToken`. */
export interface RefreshTokenStore {
  readonly onRefreshToken: ((refreshToken: string) => void | Promise<void>) | undefined
  /** How long `onRefreshToken` may take before the source carries on without it, in ms. */
  readonly timeoutMs: number
  /** `onRefreshToken` threw or did not settle in time. */
  readonly failed: (reason: 'threw' | 'timed_out') => void
}

/** Holds the refresh token given as `input` (resolved on first use) and its rotations. */
export function createRefreshTokenHolder(
  input: SecretInput,
  context: { readonly clientId: string; readonly issuer: string },
  store: RefreshTokenStore,
): RefreshTokenHolder {
  let current: string | undefined
  let chain: Promise<unknown> = Promise.resolve()
  // The refused token, as a digest (it is dead, but still not kept in clear), and the refusal.
  let refused: { readonly digest: string; readonly error: TokenSourceError } | undefined
  const digestOf = (token: string) => createHash('sha256').update(token).digest('base64url')

  /**
   * Awaits `onRefreshToken`, at most `timeoutMs`: the new token is held in memory either way (the
   * old one no longer works), and a hook that never settles must not stop every later grant.
   */
  async function stored(refreshToken: string): Promise<void> {
    const { onRefreshToken, timeoutMs, failed } = store
    if (onRefreshToken === undefined) return
    let timer: NodeJS.Timeout | undefined
    const outcome = await Promise.race([
      Promise.resolve()
        .then(() => onRefreshToken(refreshToken))
        .then(
          () => 'stored' as const,
          () => 'threw' as const,
        ),
      new Promise<'timed_out'>((resolve) => {
        timer = setTimeout(() => resolve('timed_out'), timeoutMs)
      }),
    ])
    clearTimeout(timer)
    if (outcome !== 'stored') failed(outcome)
  }

  return {
    run(grant) {
      const run = chain.then(async () => {
        if (current === undefined) {
          const resolved = await resolveSecret<string>(
            input,
            { ...context, option: 'refreshToken' },
            (value): value is string => typeof value === 'string',
          )
          if (refused !== undefined && digestOf(resolved) === refused.digest) throw refused.error
          current = resolved
        }
        let result: GrantResult
        try {
          result = await grant(current)
        } catch (error) {
          if (isTokenSourceError(error) && error.code === 'ERR_REFRESH_TOKEN_REFUSED') {
            refused = { digest: digestOf(current), error }
            current = undefined
          }
          throw error
        }
        if (result.refreshToken !== undefined && result.refreshToken !== current) {
          current = result.refreshToken
          await stored(result.refreshToken)
        }
        return result
      })
      chain = run.catch(() => undefined)
      return run
    },
  }
}
