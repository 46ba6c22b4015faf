/**
 * The refresh token of a source that uses the refresh_token grant (RFC 6749 §6): requests run one
 * at a time, each with the latest refresh token, and a rotated one replaces the old one before the
 * next request can start, so a rotated-out token is never sent (a provider that detects reuse
 * revokes the whole grant, RFC 9700 §4.14.2).
 *
 * @module
 */
import type { GrantResult } from './endpoint.js'
import { resolveSecret, type SecretInput } from './secrets.js'

/** Runs refresh_token grants one at a time. */
export interface RefreshTokenHolder {
  /** Runs `grant` with the current refresh token once every earlier grant has settled. */
  run(grant: (refreshToken: string) => Promise<GrantResult>): Promise<GrantResult>
}

/** Holds the refresh token given as `input` (resolved on first use) and its rotations. */
export function createRefreshTokenHolder(
  input: SecretInput,
  context: { readonly clientId: string; readonly issuer: string },
  onRefreshToken: ((refreshToken: string) => void | Promise<void>) | undefined,
): RefreshTokenHolder {
  let current: string | undefined
  let chain: Promise<unknown> = Promise.resolve()
  return {
    run(grant) {
      const run = chain.then(async () => {
        current ??= await resolveSecret<string>(
          input,
          { ...context, option: 'refreshToken' },
          (value): value is string => typeof value === 'string',
        )
        const result = await grant(current)
        if (result.refreshToken !== undefined && result.refreshToken !== current) {
          current = result.refreshToken
          try {
            await onRefreshToken?.(result.refreshToken)
          } catch {
            // The new token is held in memory either way; the old one no longer works.
          }
        }
        return result
      })
      chain = run.catch(() => undefined)
      return run
    },
  }
}
