import { createHash, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'

interface Entry {
  count: number
  expiresAt: number
}

/** A request body is one key and two numbers: a few hundred bytes. */
const MAX_BODY_BYTES = 4096
const MAX_KEY_LENGTH = 1024
/** tollgate's longest window (366 days): no counter or claim lives longer. */
const MAX_TTL_MS = 31_622_400_000

const digest = (text: string) => createHash('sha256').update(text).digest()
const isWhole = (value: unknown, max = Number.MAX_SAFE_INTEGER): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 1 && value <= max

/** Answers without reading what is left of the body, and closes the connection. */
function refuse(response: ServerResponse, status: 400 | 401 | 413): void {
  response.writeHead(status, { connection: 'close' }).end()
}

/** The body as text, or `undefined` once it passes `MAX_BODY_BYTES` (the rest is not read). */
function bodyOf(request: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    request.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size <= MAX_BODY_BYTES) return void chunks.push(chunk)
      request.pause().removeAllListeners('data')
      resolve(undefined)
    })
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    request.on('error', reject)
  })
}

/**
 * The counter service: counters and claims in one Map of one Node process. Each operation reads
 * and writes its entry with no `await` in between, so it runs to its end before the next one
 * starts: that is the atomicity the contract asks for. Run one process of it (a second one
 * would count apart); its counters die with it.
 */
export function createCounterService(secret: string): Server {
  const entries = new Map<string, Entry>()
  const expected = digest(`Bearer ${secret}`)

  function live(key: string, now: number): Entry | undefined {
    const entry = entries.get(key)
    if (entry === undefined || entry.expiresAt > now) return entry
    entries.delete(key)
    return undefined
  }

  function increment(key: string, amount: number, ttlMs: number, now: number) {
    const entry = live(key, now) ?? { count: 0, expiresAt: now + ttlMs }
    // Saturates: past 2^53 a sum would lose units.
    entry.count = Math.min(entry.count + amount, Number.MAX_SAFE_INTEGER)
    entries.set(key, entry)
    return { count: entry.count, msBeforeReset: entry.expiresAt - now }
  }

  function claimOnce(key: string, ttlMs: number, now: number) {
    if (live(key, now) !== undefined) return { claimed: false }
    entries.set(key, { count: 1, expiresAt: now + ttlMs })
    return { claimed: true }
  }

  // Expired entries nobody asks for again would stay forever.
  const sweeper = setInterval(() => {
    const now = Date.now()
    for (const [key, entry] of entries) if (entry.expiresAt <= now) entries.delete(key)
  }, 60_000)
  sweeper.unref()

  const server = createServer((request, response) => {
    // Decided on the headers alone, before a byte of the body is read: a caller without the
    // secret, or with a body larger than any request of the contract, costs no memory.
    if (!timingSafeEqual(digest(request.headers.authorization ?? ''), expected)) {
      return refuse(response, 401)
    }
    const operation = request.method === 'POST' ? request.url : undefined
    if (operation !== '/increment' && operation !== '/claim-once') return refuse(response, 400)
    if (Number(request.headers['content-length'] ?? 0) > MAX_BODY_BYTES) {
      return refuse(response, 413)
    }
    bodyOf(request).then(
      (text) => {
        if (text === undefined) return refuse(response, 413)
        let body: { key?: unknown; amount?: unknown; ttlMs?: unknown } = {}
        try {
          body = JSON.parse(text)
        } catch {}
        const { key, amount, ttlMs } = body ?? {}
        if (typeof key !== 'string' || key.length > MAX_KEY_LENGTH || !isWhole(ttlMs, MAX_TTL_MS)) {
          return refuse(response, 400)
        }
        const now = Date.now()
        let answer: object
        if (operation === '/claim-once') answer = claimOnce(key, ttlMs, now)
        else if (isWhole(amount)) answer = increment(key, amount, ttlMs, now)
        else return refuse(response, 400)
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer))
      },
      () => response.destroy(),
    )
  })
  server.on('close', () => clearInterval(sweeper))
  return server
}
