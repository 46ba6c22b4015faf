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

/** Each connecting client's next `ready`, shared by every call that waits for it. */
const connections = new WeakMap<object, Promise<void>>()

/**
 * `call()`, once the client has connected when it is connecting now. An ioredis client without its
 * offline queue (`enableOfflineQueue: false`, as the guides configure it so that an outage fails
 * fast) refuses every command outright while it connects: a gateway that takes requests the moment
 * it listens answered its first ones 503 while Redis was a few milliseconds away. The caller's
 * deadline bounds the wait; a client that is not connecting (ready, or waiting to reconnect after
 * an outage) is called at once, and any other client (a plain object with the same commands) too.
 */
export function onceConnected<T>(client: object, call: () => Promise<T>): Promise<T> {
  const { status, once, off } = client as {
    status?: unknown
    once?: (event: string, listener: () => void) => unknown
    off?: (event: string, listener: () => void) => unknown
  }
  if ((status !== 'connecting' && status !== 'connect') || typeof once !== 'function') {
    // A client that throws instead of rejecting (a closed one, a plain object) fails the same way.
    try {
      return call()
    } catch (error) {
      return Promise.reject(error)
    }
  }
  let connected = connections.get(client)
  if (connected === undefined) {
    connected = new Promise<void>((settle) => {
      // The attempt's end either way: ready, or closed (the command then fails as it would have).
      const done = () => {
        connections.delete(client)
        if (typeof off === 'function') {
          off.call(client, 'ready', done)
          off.call(client, 'close', done)
        }
        settle()
      }
      once.call(client, 'ready', done)
      once.call(client, 'close', done)
    })
    connections.set(client, connected)
  }
  return connected.then(call)
}

/**
 * A store call with both guards: `call()` once `client` has connected when it is connecting now
 * ({@link onceConnected}), and its answer within `timeoutMs` ({@link withinDeadline}), which
 * bounds the wait too.
 */
export function storeCall<T>(
  client: object,
  call: () => Promise<T>,
  timeoutMs: number,
  late: () => Error,
): Promise<T> {
  return withinDeadline(onceConnected(client, call), timeoutMs, late)
}
