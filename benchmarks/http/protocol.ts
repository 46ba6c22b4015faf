/**
 * Messages between the HTTP orchestrator and its children (servers and the load generator), over
 * Node's IPC channel, plus the configuration a server receives in `BENCH_SERVER`.
 */
import type { HttpMode } from '../results.ts'

export interface ServerConfig {
  /** Keycloak auth URL of the bench issuer (`http://127.0.0.1:port`). */
  authUrl: string
  issuer: string
  jwksUri: string
  audience: string
  cacheEntries: number
  limiter: 'off' | 'memory' | 'redis'
}

/** `gc`: a full collection now (servers started with `--expose-gc`), answered when done. */
export type ToServer = { id: number; type: 'cpu' } | { id: number; type: 'gc' }
export type FromServer =
  | { type: 'ready'; port: number }
  | { type: 'fatal'; message: string }
  | { id: number; type: 'cpu'; user: number; system: number; rss: number }
  | { id: number; type: 'gc' }

export interface LoadJob {
  id: number
  type: 'run'
  url: string
  seconds: number
  connections: number
  mode: HttpMode
  /** JSON file holding the tokens to rotate through (one means "repeated"). */
  tokensFile: string
}

export interface LoadOutcome {
  rps: number
  p50: number
  p99: number
  requests: number
  non2xx: number
  errors: number
  timeouts: number
  statuses: Record<string, number>
  seconds: number
}

export type FromLoad =
  | { type: 'ready' }
  | { type: 'fatal'; message: string }
  | { id: number; type: 'done'; outcome: LoadOutcome }
  | { id: number; type: 'failed'; message: string }

export const SAMPLE_SUBJECT = '00000000-0000-4000-8000-000000000000'
