/**
 * Two gateway processes (children with their own event loops and pools, see
 * `helpers/gateway-process.ts`) sharing one real PostgreSQL through rate-limiter-flexible's
 * `RateLimiterPostgres`, configured as docs/stores.md shows: the limit holds across replicas.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { GatewayProcess } from '../helpers/gateway-process.js'
import { POSTGRES_TABLE, startGatewayProcess } from '../helpers/gateway-process.js'
import type { PostgresServer } from '../helpers/postgres.js'
import { startPostgresServer } from '../helpers/postgres.js'

const LIMIT = 50
const REQUESTS_PER_GATEWAY = 100

let server: PostgresServer
const gateways: GatewayProcess[] = []

beforeAll(async () => {
  server = await startPostgresServer()
  await server
    .pool()
    .query(
      `CREATE TABLE ${POSTGRES_TABLE} (key varchar(255) PRIMARY KEY, points integer NOT NULL DEFAULT 0, expire bigint)`,
    )
  for (let index = 0; index < 2; index++) {
    gateways.push(
      await startGatewayProcess(
        server.port,
        {
          windows: [{ points: LIMIT, durationSeconds: 60 }],
          // 200 upserts of one row queue behind its lock; on a shared 2-core machine the last ones
          // can take longer than the default 50 ms, and a late one would be decided by the fallback.
          storeTimeoutMs: 5000,
          fallbackDivisor: 2,
        },
        'postgres',
      ),
    )
  }
}, 60_000)

afterAll(async () => {
  for (const gateway of gateways) gateway.stop()
  await server?.stop()
})

describe('two gateway processes sharing one PostgreSQL (rateLimit.store: { flexible })', () => {
  it('admit exactly the limit in a burst of 200', async () => {
    const reports = await Promise.all(
      gateways.map((gateway) => gateway.burst({ tenant: 'burst', requests: REQUESTS_PER_GATEWAY })),
    )
    expect(reports.reduce((sum, { admitted }) => sum + admitted, 0)).toBe(LIMIT)
    expect(reports.reduce((sum, { refused }) => sum + refused, 0)).toBe(
      2 * REQUESTS_PER_GATEWAY - LIMIT,
    )
    for (const report of reports) {
      expect(report.unavailable).toBe(0)
      expect(report.storeEvents).toEqual([])
    }
    const { rows } = await server
      .pool()
      .query(`SELECT points FROM ${POSTGRES_TABLE} WHERE key = $1`, [
        'tollgate:rl:{burst}:default:60',
      ])
    // Every request reached the store except those refused from memory once it said "spent".
    expect(Number(rows[0]?.points)).toBeGreaterThan(LIMIT)
  })
})
