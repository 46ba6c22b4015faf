/**
 * The load generator: a child process (pinned to its own CPU) that runs autocannon jobs sent over
 * IPC. Every mode goes through the same path: the raw requests (one per token) are built once, and
 * each connection takes the next one from a counter shared by all connections, so a token comes
 * back only after the whole list went by. Building requests per request (autocannon's
 * `setupRequest`) costs the generator more than a bare framework costs the server, which would cap
 * the baselines and flatter every ratio.
 */
import { readFileSync } from 'node:fs'
import autocannon from 'autocannon'
import type { FromLoad, LoadJob, LoadOutcome } from './protocol.ts'

const send = (message: FromLoad) => process.send?.(message)

interface PrebuiltRequest {
  method: 'GET'
  path: string
  headers: Record<string, string>
  requestBuffer: Buffer
}

/** autocannon's per-connection request iterator: the part this file drives directly. */
interface RequestIterator {
  currentRequest: unknown
  resetted: boolean
  nextRequest(): unknown
}

interface Prebuilt {
  requests: PrebuiltRequest[]
  /** Request order as indexes into `requests` (the realistic mode); absent: rotate in order. */
  schedule?: number[]
  /** Where the next run on the same server picks up, so a schedule is never replayed. */
  position: number
}

const built = new Map<string, Prebuilt>()

/** The bytes autocannon itself would write for a GET with one extra header. */
function prebuild(job: LoadJob): Prebuilt {
  const key = `${job.url} ${job.tokensFile}`
  let prebuilt = built.get(key)
  if (!prebuilt) {
    const parsed = JSON.parse(readFileSync(job.tokensFile, 'utf8')) as
      | string[]
      | { tokens: string[]; schedule: number[] }
    const tokens = Array.isArray(parsed) ? parsed : parsed.tokens
    if (!Array.isArray(tokens) || tokens.length === 0)
      throw new Error(`${job.tokensFile}: no tokens`)
    const url = new URL(job.url)
    const requests = tokens.map((token): PrebuiltRequest => {
      const headers = { authorization: `Bearer ${token}` }
      const head = `GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nConnection: keep-alive\r\nauthorization: ${headers.authorization}\r\n\r\n`
      return { method: 'GET', path: url.pathname, headers, requestBuffer: Buffer.from(head) }
    })
    prebuilt = { requests, position: 0 }
    if (!Array.isArray(parsed)) prebuilt.schedule = parsed.schedule
    // One mode at a time: the servers of the mode before are done with theirs.
    for (const other of built.keys()) if (!other.endsWith(` ${job.tokensFile}`)) built.delete(other)
    built.set(key, prebuilt)
  }
  return prebuilt
}

async function run(job: LoadJob): Promise<LoadOutcome> {
  const prebuilt = prebuild(job)
  const { requests, schedule } = prebuilt
  // A schedule goes on where the last run on this server stopped: replaying it would turn its
  // first uses of a token (misses) into hits.
  let next = schedule === undefined ? 0 : prebuilt.position
  const take =
    schedule === undefined
      ? () => requests[next++ % requests.length]!
      : () => {
          const request = requests[schedule[next % schedule.length]!]!
          next++
          prebuilt.position = next
          return request
        }
  const result = await autocannon({
    url: job.url,
    connections: job.connections,
    duration: job.seconds,
    pipelining: 1,
    timeout: 10,
    setupClient: (client) => {
      const iterator = (client as unknown as { requestIterator?: RequestIterator }).requestIterator
      if (!iterator || typeof iterator.nextRequest !== 'function') {
        throw new Error('autocannon internals changed: Client#requestIterator.nextRequest is gone')
      }
      iterator.currentRequest = take()
      iterator.nextRequest = function nextRequest(this: RequestIterator) {
        this.resetted = false
        this.currentRequest = take()
        return this.currentRequest
      }
    },
  })
  const statuses: Record<string, number> = {}
  for (const [code, stats] of Object.entries(result.statusCodeStats ?? {})) {
    statuses[code] = (stats as { count: number }).count
  }
  const requestsDone = Object.values(statuses).reduce((sum, count) => sum + count, 0)
  return {
    rps: requestsDone / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: requestsDone,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statuses,
    seconds: result.duration,
  }
}

process.on('disconnect', () => process.exit(0))
process.on('message', (job: LoadJob) => {
  if (job.type !== 'run') return
  run(job).then(
    (outcome) => send({ id: job.id, type: 'done', outcome }),
    (error: Error) => send({ id: job.id, type: 'failed', message: error.stack ?? error.message }),
  )
})
send({ type: 'ready' })
