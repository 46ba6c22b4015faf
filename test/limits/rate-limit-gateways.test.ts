/**
 * Two gateway processes (children with their own event loops, see `helpers/gateway-process.ts`)
 * sharing one real `redis-server`, under bursts that keep their event loops busy well past the
 * store deadline. A busy gateway is not a failed store: the limit stays exact.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { BurstReport, GatewayProcess } from '../helpers/gateway-process.js'
import { startGatewayProcess } from '../helpers/gateway-process.js'
import type { RedisServer } from '../helpers/redis.js'
import { startRedisServer } from '../helpers/redis.js'

/**
 * `LAG_BURSTS=20 npx vitest run test/limits/rate-limit-gateways.test.ts` for a longer run: more
 * bursts of busy event loops, the same exact limit.
 */
const BURSTS = Number(process.env['LAG_BURSTS'] ?? 3)
const LIMIT = 50
const REQUESTS_PER_GATEWAY = 100
const KEY_PREFIX = 'lag'

let server: RedisServer
const gateways: GatewayProcess[] = []

beforeAll(async () => {
  server = await startRedisServer()
  for (let index = 0; index < 2; index++) {
    gateways.push(
      await startGatewayProcess(server.port, {
        keyPrefix: KEY_PREFIX,
        windows: [{ points: LIMIT, durationSeconds: 60 }],
        // The loops are held twice this long. With the default 50 ms, Redis itself, starved of
        // CPU by the two busy gateways and whatever else runs on a shared 2-core machine, now and
        // then answers late: a slow store, rightly failed over, which is not what this tests.
        storeTimeoutMs: 500,
      }),
    )
  }
}, 60_000)

afterAll(async () => {
  for (const gateway of gateways) gateway.stop()
  await server?.stop()
})

describe('two gateway processes sharing one Redis', () => {
  it('admit exactly the limit when their event loops are busy past the store deadline', async ({
    annotate,
  }) => {
    const trials: { admitted: number; reports: BurstReport[] }[] = []
    for (let burst = 0; burst < BURSTS; burst++) {
      const tenant = `busy-${burst}`
      const reports = await Promise.all(
        gateways.map((gateway) =>
          gateway.burst({
            tenant,
            requests: REQUESTS_PER_GATEWAY,
            counterKey: `${KEY_PREFIX}:{${tenant}}:default:60`,
            commandsInBurst: REQUESTS_PER_GATEWAY * gateways.length,
            busyAtLeastMs: 1000,
          }),
        ),
      )
      trials.push({ admitted: reports.reduce((sum, { admitted }) => sum + admitted, 0), reports })
    }
    await annotate(
      `${BURSTS} bursts of ${REQUESTS_PER_GATEWAY} × 2 concurrent requests, limit ${LIMIT}: admitted ${trials
        .map(({ admitted }) => admitted)
        .join(', ')}; event loops held ${trials
        .flatMap(({ reports }) => reports.map(({ busyMs }) => busyMs.toFixed(0)))
        .join('/')} ms`,
    )
    expect(trials.map(({ admitted }) => admitted)).toEqual(Array(BURSTS).fill(LIMIT))
    for (const { reports } of trials) {
      for (const report of reports) {
        expect(report.unavailable).toBe(0)
        expect(report.storeEvents).toEqual([])
      }
    }
  })
})
