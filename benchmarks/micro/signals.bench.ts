/**
 * The Shared Signals receiver's throughput and reach: SETs (RISC account-disabled, each for
 * another user) verified and applied per second by one receiver with the memory store; then,
 * with two gate instances sharing the revocation list through Redis (`BENCH_REDIS_URL`, default
 * the local Redis), the time from a SET applied on one instance to the other refusing the user's
 * token, p50 and p99 over the runs.
 *
 *   npm --prefix benchmarks run signals     (after `npm run build` at the root)
 */
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { distDir, quick } from '../config.ts'
import { connectRedis } from '../redis.ts'
import { type Gate, loadCore } from '../tollgate.ts'

interface SetLike {
  readonly token: string
}
interface Testing {
  createTestIssuer(options: { realms: string[]; audience: string }): Promise<{
    url: string
    issuer(realm?: string): string
    mint(claims: Record<string, unknown>): Promise<string>
    close(): Promise<void>
  }>
  createTestTransmitter(options: { audience: string }): Promise<{
    issuer: string
    sign(event: string, subject: Record<string, unknown>): Promise<SetLike>
    close(): Promise<void>
  }>
  SSF_EVENTS: Record<string, string>
}
interface Receiver {
  receive(token: string, delivery: 'push' | 'poll'): Promise<unknown>
}

const core = (await loadCore()) as unknown as {
  createGate(options: unknown): Gate
  keycloak(options: { authUrl: string; realms: string[] }): unknown
  createSignalReceiver(options: unknown): Receiver
}
const testing = (await import(pathToFileURL(join(distDir, 'src/testing/index.js')).href)) as Testing

const AUDIENCE = 'https://gateway.example.com'
const issuer = await testing.createTestIssuer({ realms: ['acme'], audience: 'gateway' })
const transmitter = await testing.createTestTransmitter({ audience: AUDIENCE })
const iss = issuer.issuer('acme')
const disabled = testing.SSF_EVENTS.accountDisabled as string
const base = {
  issuers: core.keycloak({ authUrl: issuer.url, realms: ['acme'] }),
  audience: 'gateway',
}
const receiverOf = (gate: Gate) =>
  core.createSignalReceiver({
    gate,
    transmitter: { issuer: transmitter.issuer },
    audience: AUDIENCE,
    authorization: 'Bearer bench',
  })

// 1. SETs verified and applied per second, one receiver, memory store.
const COUNT = quick ? 500 : 2000
const gate = core.createGate({ ...base, revocation: {} })
await gate.ready()
const receiver = receiverOf(gate)
const sets: SetLike[] = []
for (let i = 0; i < COUNT + 50; i++) {
  sets.push(await transmitter.sign(disabled, { format: 'iss_sub', iss, sub: `user-${i}` }))
}
for (const set of sets.slice(COUNT)) await receiver.receive(set.token, 'push')
const started = performance.now()
for (const set of sets.slice(0, COUNT)) await receiver.receive(set.token, 'push')
const elapsed = performance.now() - started
console.log(
  `SETs verified and applied: ${Math.round((COUNT / elapsed) * 1000)} per second (${COUNT} account-disabled SETs, memory store)`,
)

// 2. From a SET applied on instance A to instance B refusing the user's token, through Redis.
const redis = await connectRedis()
if (!('client' in redis)) {
  console.log(`push-to-refusal on another instance not measured: ${redis.error}`)
} else {
  const shared = { ...base, revocation: { store: { redis: redis.client } } }
  const a = core.createGate(shared)
  const b = core.createGate(shared)
  await Promise.all([a.ready(), b.ready()])
  const onA = receiverOf(a)
  const RUNS = quick ? 50 : 200
  const waits: number[] = []
  for (let run = 0; run < RUNS; run++) {
    const sub = `fleet-${Date.now()}-${run}`
    const token = await issuer.mint({ sub })
    const request = { headers: { authorization: `Bearer ${token}` } }
    await b.check(request)
    const set = await transmitter.sign(disabled, { format: 'iss_sub', iss, sub })
    const pushedAt = performance.now()
    await onA.receive(set.token, 'push')
    for (;;) {
      const refused = await b.check(request).then(
        () => false,
        () => true,
      )
      if (refused) break
      if (performance.now() - pushedAt > 5_000) throw new Error('not refused within 5 s')
      await new Promise((resolve) => setImmediate(resolve))
    }
    waits.push(performance.now() - pushedAt)
  }
  waits.sort((x, y) => x - y)
  const at = (q: number) =>
    (waits[Math.min(waits.length - 1, Math.floor(q * waits.length))] as number).toFixed(2)
  console.log(
    `push to refusal on another instance (Redis): p50 ${at(0.5)} ms, p99 ${at(0.99)} ms over ${RUNS} SETs`,
  )
  await a.close?.()
  await b.close?.()
  redis.client.disconnect()
}
await gate.close?.()
await transmitter.close()
await issuer.close()
process.exit(0)
