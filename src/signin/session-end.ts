/**
 * Ending sessions: one (logout, expiry, an unreadable session) or every session a back- or
 * front-channel logout names, with the sid and sub index entries under which they are found.
 *
 * @module
 */
import type { SignInDeps } from './deps.js'
import type { RefreshRefusal, SessionEndReason } from './events.js'
import type { SessionEnder } from './internals.js'
import { indexOf, type OpenSession } from './session.js'

/** The sid and sub indexes under which back-channel logout finds a session. */
export function indexesOf(session: Pick<OpenSession, 'issuer' | 'subject' | 'sid'>): string[] {
  const indexes = [indexOf('sub', session.issuer, session.subject)]
  if (session.sid !== undefined) indexes.push(indexOf('sid', session.issuer, session.sid))
  return indexes
}

/**
 * Deletes a session and its index entries: those of `session` when it could be read, else
 * `indexes` (the one a logout from the provider walked). An entry left behind (an unreadable
 * session) is dropped the next time its index is walked or grows. `refusal` is what the provider
 * answered to a refused refresh, for the event.
 */
export async function endSession(
  deps: Pick<SignInDeps, 'settings' | 'stored' | 'emit'>,
  key: string,
  session: Pick<OpenSession, 'issuer' | 'subject' | 'sid'> | undefined,
  reason: SessionEndReason,
  indexes: readonly string[] = [],
  refusal?: RefreshRefusal,
): Promise<void> {
  await deps.stored(
    deps.settings.store.delete(key, session === undefined ? indexes : indexesOf(session)),
  )
  deps.emit?.({
    type: 'session_ended',
    issuer: session?.issuer,
    subject: session?.subject,
    reason,
    ...(refusal === undefined ? {} : { refusal }),
  })
}

/** Logout from the provider's part of the core: ends the sessions of a provider session or a user. */
export function sessionEnder(deps: Pick<SignInDeps, 'settings' | 'stored' | 'emit'>): SessionEnder {
  return {
    async endSessions(from, by, reason = 'back_channel_logout') {
      const index =
        by.sid !== undefined
          ? indexOf('sid', from, by.sid)
          : by.sub !== undefined
            ? indexOf('sub', from, by.sub)
            : undefined
      if (index === undefined) return 0
      const keys = new Set(await deps.stored(deps.settings.store.indexed(index)))
      for (const key of keys) await endSession(deps, key, undefined, reason, [index])
      return keys.size
    },
  }
}
