/**
 * Catching up from the log of changes (`catchUp`), against a real `redis-server` holding a list
 * written the way the gate's scripts write it: what it applies, and when it says the log cannot
 * answer or Redis's history is no longer the one this instance followed.
 */
import type { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RevocationList } from '../../src/revocation/list.js'
import { type ChangesState, catchUp } from '../../src/revocation/redis-changes.js'
import { RedisLink } from '../../src/revocation/redis-link.js'
import { PendingWrites } from '../../src/revocation/redis-writes.js'
import { type RedisServer, startRedisServer } from '../helpers/redis.js'

const ISS = 'https://sso.example.com/realms/acme'
let server: RedisServer
let admin: Redis
let prefixes = 0

beforeAll(async () => {
  server = await startRedisServer()
  admin = await server.client()
})
afterAll(async () => {
  await server?.stop()
})

/** A list under a new prefix whose log holds changes 1..`count`, made by `origin`. */
async function logged(count: number, origin = 'peer') {
  const prefix = `changes${++prefixes}`
  const tag = `{${prefix}}`
  await admin.hset(`${tag}:entries`, '', 'E:99999999999999')
  for (let seq = 1; seq <= count; seq++) {
    const field = JSON.stringify([ISS, 'sub', `user-${seq}`])
    await admin.hset(`${tag}:entries`, field, `1:${Date.now() + 3_600_000}`)
    const message = JSON.stringify([
      seq,
      'add',
      field,
      1,
      Date.now() + 3_600_000,
      1000 + seq,
      origin,
    ])
    await admin.xadd(`${tag}:log`, `${seq}-0`, 'm', message)
  }
  await admin.set(`${tag}:seq`, String(count))
  return prefix
}

function stateFor(prefix: string, lastSeq: number, lastChange?: string): ChangesState {
  const link = new RedisLink(admin as never, { storeTimeoutMs: 5000, keyPrefix: prefix }, undefined)
  return {
    link,
    list: new RevocationList(),
    writes: new PendingWrites(link, 'me'),
    touched: new Map(),
    closed: () => false,
    lastSeq,
    highestSeen: lastSeq,
    epoch: 'E',
    lastChange,
    emit: undefined,
    origin: 'me',
  }
}

describe('catchUp', () => {
  it('applies only the changes after the last one applied, in order', async () => {
    const prefix = await logged(5)
    const state = stateFor(prefix, 3, 'peer:1003')
    expect(await catchUp(state)).toBe(undefined)
    expect(state.lastSeq).toBe(5)
    expect(
      state.list
        .entries()
        .map((entry) => entry.value)
        .sort(),
    ).toEqual(['user-4', 'user-5'])
  })

  it('reads nothing but the last change when nothing changed', async () => {
    const prefix = await logged(3)
    const state = stateFor(prefix, 3, 'peer:1003')
    expect(await catchUp(state)).toBe(undefined)
    expect(state.list.size).toBe(0)
  })

  it('asks for a full reload when the changes it missed are no longer in the log', async () => {
    const prefix = await logged(6)
    await admin.xtrim(`{${prefix}}:log`, 'MAXLEN', 2)
    const state = stateFor(prefix, 2, 'peer:1002')
    expect(await catchUp(state)).toEqual({ epoch: 'E', seq: 6, dataLoss: false })
  })

  it('says Redis lost data when its history forked at the same number (an older snapshot written again)', async () => {
    const prefix = await logged(4, 'someone-else')
    const state = stateFor(prefix, 4, 'peer:1004')
    expect(await catchUp(state)).toEqual({ epoch: 'E', seq: 4, dataLoss: true })
  })

  it('says Redis lost data when its sequence is behind a change this instance wrote', async () => {
    const prefix = await logged(2)
    const state = stateFor(prefix, 2, 'peer:1002')
    state.writes.lastWritten = 3
    expect(await catchUp(state)).toEqual({ epoch: 'E', seq: 2, dataLoss: true })
  })

  it('says Redis lost data under another epoch', async () => {
    const prefix = await logged(2)
    const state = stateFor(prefix, 2, 'peer:1002')
    state.epoch = 'before'
    expect(await catchUp(state)).toMatchObject({ epoch: 'E', dataLoss: true })
  })
})
