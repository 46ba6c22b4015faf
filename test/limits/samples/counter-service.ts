import { createHash, timingSafeEqual } from 'node:crypto'
import { createServer, type Server } from 'node:http'

interface Entry {
  count: number
  expiresAt: number
}

const digest = (text: string) => createHash('sha256').update(text).digest()
const isWhole = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 1

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
    entry.count += amount
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

  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    if (!timingSafeEqual(digest(request.headers.authorization ?? ''), expected)) {
      response.writeHead(401).end()
      return
    }
    let body: { key?: unknown; amount?: unknown; ttlMs?: unknown } = {}
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
    } catch {}
    const { key, amount, ttlMs } = body
    const now = Date.now()
    let answer: object | undefined
    if (request.method === 'POST' && typeof key === 'string' && isWhole(ttlMs)) {
      if (request.url === '/increment' && isWhole(amount))
        answer = increment(key, amount, ttlMs, now)
      if (request.url === '/claim-once') answer = claimOnce(key, ttlMs, now)
    }
    if (answer === undefined) {
      response.writeHead(400).end()
      return
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer))
  })
  server.on('close', () => clearInterval(sweeper))
  return server
}
