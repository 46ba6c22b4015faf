/**
 * Loads tollgate from the built package (`../dist`), which is what ships, and builds the options
 * every bench uses. Missing modules are reported, not thrown: a suite skips what is not built yet.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { distDir } from './config.ts'
import { AUDIENCE, REALM } from './fixtures.ts'

/** The slice of tollgate's public API the benchmarks use, typed loosely on purpose. */
export interface Gate {
  ready(): Promise<unknown>
  check(request: { headers: Record<string, string> }): Promise<unknown>
  close?(): Promise<unknown> | unknown
}

export interface CoreModule {
  createGate(options: GateOptions): Gate
  keycloak(options: { authUrl: string; realms: string[] }): unknown
}

export type Middleware = (...args: never[]) => unknown
export interface AdapterModule {
  tollgate(options: GateOptions): Middleware
}

export interface GateOptions {
  issuers: unknown
  audience: string
  cache?: { maxEntries: number } | false
  tenant?: { claim: string }
  rateLimit?: {
    windows: { points: number; durationSeconds: number }[]
    store?: { redis: unknown } | { flexible: (window: never) => unknown }
    storeTimeoutMs?: number
  }
}

const modulePath = (relative: string): string => join(distDir, relative)

export const paths = {
  core: modulePath('src/index.js'),
  express: modulePath('adapters/express/index.js'),
  koa: modulePath('adapters/koa/index.js'),
  fastify: modulePath('adapters/fastify/index.js'),
  hono: modulePath('adapters/hono/index.js'),
  testing: modulePath('src/testing/index.js'),
  client: modulePath('src/client/index.js'),
  rateLimit: modulePath('src/limits/rate-limit.js'),
}

export const isBuilt = (): boolean => existsSync(paths.core)
export const hasRateLimit = (): boolean => existsSync(paths.rateLimit)

async function load<T>(path: string): Promise<T> {
  if (!existsSync(path)) {
    throw new Error(`${path} is missing: run \`npm run build\` at the repository root first`)
  }
  return (await import(pathToFileURL(path).href)) as T
}

export const loadCore = () => load<CoreModule>(paths.core)
export const loadExpress = () => load<AdapterModule>(paths.express)
export const loadKoa = () => load<AdapterModule>(paths.koa)
export const loadFastify = () => load<AdapterModule>(paths.fastify)
export const loadHono = () => load<AdapterModule>(paths.hono)
export const loadClient = () => load<ClientModule>(paths.client)

/** The slice of `tollgate/client` the benchmarks use. */
export interface ClientModule {
  createTokenSource(options: { issuer: unknown; clientId: string; clientSecret: string }): {
    get(): Promise<string>
    close(): void
  }
}

/** Limits high enough that no bench ever sees a 429. */
export const UNREACHABLE_LIMIT = { points: 1_000_000_000, durationSeconds: 60 }

export interface GateConfig {
  authUrl: string
  cacheEntries: number | false
  limiter: 'off' | 'memory' | 'redis'
  redis?: unknown
}

export function gateOptions(core: CoreModule, config: GateConfig): GateOptions {
  const options: GateOptions = {
    issuers: core.keycloak({ authUrl: config.authUrl, realms: [REALM] }),
    audience: AUDIENCE,
    cache: config.cacheEntries === false ? false : { maxEntries: config.cacheEntries },
  }
  if (config.limiter !== 'off') {
    options.tenant = { claim: 'tenant' }
    options.rateLimit = { windows: [UNREACHABLE_LIMIT] }
    if (config.limiter === 'redis') options.rateLimit.store = { redis: config.redis }
  }
  return options
}

/** Closes a gate if the built version has `close()` (timers would keep the process alive). */
export async function closeGate(gate: Gate | undefined): Promise<void> {
  if (gate && typeof gate.close === 'function') await gate.close()
}
