/**
 * One deadline for a call to a store (Redis, a shared store of the application's): what the call
 * answered, or the error `late()` makes when it has not answered within `timeoutMs`. A base file:
 * every store client imports it.
 *
 * @module
 */

/**
 * `operation`'s answer, or a rejection with `late()` when it has not answered within `timeoutMs`.
 *
 * Node runs timers before the poll phase that reads sockets: after the event loop was busy past
 * the deadline (a long synchronous task, a garbage collection), the store's answer may be waiting
 * unread while the timer fires. The deadline therefore yields once (`setImmediate` runs after that
 * poll phase) and fails only if the answer is still missing: a busy gateway is not a slow store.
 * The timer is unref'd so a pending call does not keep a process alive, and a rejection of
 * `operation` after the deadline is swallowed rather than reported as unhandled.
 */
export function withinDeadline<T>(
  operation: Promise<T>,
  timeoutMs: number,
  late: () => Error,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => setImmediate(() => reject(late())), timeoutMs)
    timer.unref()
  })
  operation.catch(() => {})
  return Promise.race([operation, deadline]).finally(() => clearTimeout(timer))
}
