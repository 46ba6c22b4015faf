/** The HTTP contenders, the token modes each one runs, and which need what to run at all. */
import { type Framework, HTTP_MODES, type HttpMode } from '../results.ts'

export interface HttpContender {
  name: string
  framework: Framework
  file: string
  bare?: true
  /** tollgate contenders need dist/; `redis` ones also a Redis server and the rate-limit module. */
  tollgate?: 'memory' | 'redis'
  modes: readonly HttpMode[]
}

const ALL: readonly HttpMode[] = ['repeated', 'realistic', 'pool', 'forged', 'unknown-kid']
const VALID: readonly HttpMode[] = ['repeated', 'pool']
/**
 * The floor middleware (`servers/floor.ts`) runs every mode a target is judged on, and with
 * tollgate the repeated forgeries (issue 24: what the forged-token memo is for), which the peers skip.
 */
const JUDGED: readonly HttpMode[] = HTTP_MODES
/** Contender names read `<framework> + floor (…)`: the targets quote its figure beside tollgate's. */
export const FLOOR = 'floor (inline node:crypto + Map)'

export const contenders: readonly HttpContender[] = [
  {
    name: 'express (bare)',
    framework: 'express',
    file: './servers/express-bare.ts',
    bare: true,
    modes: VALID,
  },
  {
    name: 'express + tollgate',
    framework: 'express',
    file: './servers/express-tollgate.ts',
    tollgate: 'memory',
    modes: JUDGED,
  },
  {
    name: 'express + tollgate (Redis limiter)',
    framework: 'express',
    file: './servers/express-tollgate.ts',
    tollgate: 'redis',
    modes: VALID,
  },
  {
    name: `express + ${FLOOR}`,
    framework: 'express',
    file: './servers/express-floor.ts',
    modes: JUDGED,
  },
  {
    name: 'express + express-jwt + jwks-rsa',
    framework: 'express',
    file: './servers/express-jwt.ts',
    modes: ALL,
  },
  {
    name: 'express + express-oauth2-jwt-bearer',
    framework: 'express',
    file: './servers/express-oauth2.ts',
    modes: ALL,
  },
  { name: 'koa (bare)', framework: 'koa', file: './servers/koa-bare.ts', bare: true, modes: VALID },
  {
    name: 'koa + tollgate',
    framework: 'koa',
    file: './servers/koa-tollgate.ts',
    tollgate: 'memory',
    modes: JUDGED,
  },
  { name: `koa + ${FLOOR}`, framework: 'koa', file: './servers/koa-floor.ts', modes: JUDGED },
  { name: 'koa + koa-jwt + jwks-rsa', framework: 'koa', file: './servers/koa-jwt.ts', modes: ALL },
  {
    name: 'fastify (bare)',
    framework: 'fastify',
    file: './servers/fastify-bare.ts',
    bare: true,
    modes: VALID,
  },
  {
    name: 'fastify + tollgate',
    framework: 'fastify',
    file: './servers/fastify-tollgate.ts',
    tollgate: 'memory',
    modes: JUDGED,
  },
  {
    name: `fastify + ${FLOOR}`,
    framework: 'fastify',
    file: './servers/fastify-floor.ts',
    modes: JUDGED,
  },
  {
    name: 'fastify + @fastify/jwt + get-jwks',
    framework: 'fastify',
    file: './servers/fastify-jwt.ts',
    modes: ALL,
  },
  {
    name: 'hono (bare)',
    framework: 'hono',
    file: './servers/hono-bare.ts',
    bare: true,
    modes: VALID,
  },
  {
    name: 'hono + tollgate',
    framework: 'hono',
    file: './servers/hono-tollgate.ts',
    tollgate: 'memory',
    modes: JUDGED,
  },
  { name: `hono + ${FLOOR}`, framework: 'hono', file: './servers/hono-floor.ts', modes: JUDGED },
  { name: 'hono + jwk (hono/jwk)', framework: 'hono', file: './servers/hono-jwk.ts', modes: ALL },
]
