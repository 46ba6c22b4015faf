/**
 * Configuration problems reported when the application gave no `onEvent` listener: through
 * `process.emitWarning` (Node prints it on stderr, `process.on('warning')` receives it), at most
 * once per code and subject every {@link WARNING_INTERVAL_MS}, never per request, never a token.
 *
 * @module
 */

/** How long one warning code and subject stay quiet after being reported: 10 minutes. */
export const WARNING_INTERVAL_MS = 600_000

/** The subjects tracked per process; past this, the oldest is forgotten (it may warn again). */
const MAX_SUBJECTS = 256

const lastWarned = new Map<string, number>()

/** What {@link warnOnce} needs; `now` is injectable for tests. */
export interface ConfigurationWarning {
  /** A stable code, `TOLLGATE_…`: `process.on('warning')` listeners switch on `warning.code`. */
  readonly code: string
  /**
   * What the warning is about (a JWKS URL, an option name): one warning per code and subject per
   * interval. Never a token or a secret.
   */
  readonly subject: string
  /** The whole message: what failed and what to change. */
  readonly message: string
  readonly now?: () => number
}

/**
 * Reports a configuration problem once per code and subject per {@link WARNING_INTERVAL_MS}.
 * Returns whether it was emitted. Callers use it only when the application gave no listener of
 * its own: with `onEvent`, the event is the report.
 */
export function warnOnce({
  code,
  subject,
  message,
  now = Date.now,
}: ConfigurationWarning): boolean {
  const key = `${code}\0${subject}`
  const at = now()
  const last = lastWarned.get(key)
  if (last !== undefined && at - last < WARNING_INTERVAL_MS) return false
  lastWarned.delete(key)
  lastWarned.set(key, at)
  if (lastWarned.size > MAX_SUBJECTS) {
    const oldest = lastWarned.keys().next().value
    if (oldest !== undefined) lastWarned.delete(oldest)
  }
  process.emitWarning(message, { type: 'TollgateWarning', code })
  return true
}

/** Test hook: forgets every warning, so that the next one of each code is emitted again. */
export function resetWarningsForTests(): void {
  lastWarned.clear()
}
