/**
 * Runs one request against every supported framework major (Express 5, Express 4, Koa 3, Koa 2,
 * Fastify 5, Fastify 4, Hono, the Fetch adapter) and asserts that all of them give the expected answer, byte for byte where it matters: status,
 * `WWW-Authenticate` and the JSON body. Requests go over a raw loopback socket, so repeated,
 * odd or non-ASCII header lines reach the server exactly as written.
 *
 * Every answer is also checked for hygiene: never a 500, no stack trace or file path, nothing
 * of the token echoed, `Cache-Control: no-store` and a JSON `{error, error_description}` body on
 * every refusal, and no rate-limit fields on a 401.
 */
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { connect } from 'node:net'

import { afterAll, beforeAll, expect } from 'vitest'

import type { GateOptions } from '../../src/gate/options.js'
import { APPS, FETCH_HOSTS } from '../helpers/apps.js'

export const ROUTE = '/api/v1/billing/subscriptions'

/** One HTTP request, described exactly. */
export interface Probe {
  readonly method?: string
  /** Path and query. Default {@link ROUTE}. */
  readonly path?: string
  /** One `Authorization` line per value, in order; `undefined`: no such line. */
  readonly authorization?: string | readonly string[] | undefined
  /** Further header lines, sent as written (latin1). */
  readonly headers?: ReadonlyArray<readonly [string, string]>
  /** An `application/x-www-form-urlencoded` body. */
  readonly form?: Readonly<Record<string, string>>
}

/** What came back, parsed. */
export interface Answer {
  readonly status: number
  /** Lower-cased names; repeated fields keep every value. */
  readonly headers: Readonly<Record<string, string[]>>
  readonly challenge: string | undefined
  readonly text: string
  readonly body: unknown
  /** Status line, headers and body as received (latin1). */
  readonly raw: string
}

/** What a case must answer. `challenge: undefined` means no `WWW-Authenticate` at all. */
export interface Expected {
  readonly status: number
  readonly challenge?: string | RegExp | undefined
  readonly body?: unknown
}

export const MISSING: Expected = {
  status: 401,
  challenge: 'Bearer realm="api"',
  body: { error: 'unauthorized', error_description: 'bearer token required' },
}

export const BAD_REQUEST: Expected = {
  status: 400,
  challenge:
    /^Bearer realm="api", error="invalid_request", error_description="[\x20\x21\x23-\x5B\x5D-\x7E]+"$/,
  body: { error: 'invalid_request', error_description: expect.any(String) },
}

export const INVALID_TOKEN: Expected = {
  status: 401,
  challenge: 'Bearer realm="api", error="invalid_token", error_description="invalid token"',
  body: { error: 'invalid_token', error_description: 'invalid token' },
}

export const EXPIRED: Expected = {
  status: 401,
  challenge: 'Bearer realm="api", error="invalid_token", error_description="token expired"',
  body: { error: 'invalid_token', error_description: 'token expired' },
}

export const OK: Expected = {
  status: 200,
  challenge: undefined,
  body: expect.objectContaining({ authenticated: true }),
}

export function insufficientScope(scope: string): Expected {
  return {
    status: 403,
    challenge: `Bearer realm="api", error="insufficient_scope", error_description="insufficient scope", scope="${scope}"`,
    body: { error: 'insufficient_scope', error_description: 'insufficient scope' },
  }
}

export const UNAVAILABLE: Expected = {
  status: 503,
  challenge: undefined,
  body: { error: 'temporarily_unavailable', error_description: expect.any(String) },
}

export const RATE_LIMITED: Expected = {
  status: 429,
  challenge: undefined,
  body: { error: 'rate_limited', error_description: expect.any(String) },
}

/** `Bearer <token>` */
export function bearer(token: string): Probe {
  return { authorization: `Bearer ${token}` }
}

function decodeChunked(body: string): string {
  let out = ''
  let rest = body
  for (;;) {
    const end = rest.indexOf('\r\n')
    if (end === -1) return out
    const size = Number.parseInt(rest.slice(0, end), 16)
    if (!Number.isFinite(size) || size === 0) return out
    out += rest.slice(end + 2, end + 2 + size)
    rest = rest.slice(end + 2 + size + 2)
  }
}

function requestText(probe: Probe): string {
  const lines = [`${probe.method ?? (probe.form ? 'POST' : 'GET')} ${probe.path ?? ROUTE} HTTP/1.1`]
  lines.push('Host: 127.0.0.1')
  const authorization = probe.authorization
  for (const value of typeof authorization === 'string' ? [authorization] : (authorization ?? [])) {
    lines.push(`Authorization: ${value}`)
  }
  for (const [name, value] of probe.headers ?? []) lines.push(`${name}: ${value}`)
  let body = ''
  if (probe.form !== undefined) {
    body = new URLSearchParams(probe.form as Record<string, string>).toString()
    lines.push('Content-Type: application/x-www-form-urlencoded')
    lines.push(`Content-Length: ${Buffer.byteLength(body)}`)
  }
  lines.push('Connection: close')
  return `${lines.join('\r\n')}\r\n\r\n${body}`
}

/** Sends `probe` to `server` over a fresh socket and parses the answer. */
export function send(server: Server, probe: Probe): Promise<Answer> {
  const { port } = server.address() as AddressInfo
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    socket.setTimeout(15_000, () => socket.destroy(new Error('no answer within 15 s')))
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', reject)
    socket.on('close', () => {
      const raw = Buffer.concat(chunks).toString('latin1')
      const split = raw.indexOf('\r\n\r\n')
      const head = split === -1 ? raw : raw.slice(0, split)
      let bodyRaw = split === -1 ? '' : raw.slice(split + 4)
      const [statusLine = '', ...fieldLines] = head.split('\r\n')
      const headers: Record<string, string[]> = {}
      for (const line of fieldLines) {
        const colon = line.indexOf(':')
        if (colon === -1) continue
        const name = line.slice(0, colon).trim().toLowerCase()
        const values = headers[name] ?? []
        values.push(line.slice(colon + 1).trim())
        headers[name] = values
      }
      if (headers['transfer-encoding']?.[0]?.toLowerCase() === 'chunked') {
        bodyRaw = decodeChunked(bodyRaw)
      }
      const text = Buffer.from(bodyRaw, 'latin1').toString('utf8')
      let body: unknown = text
      if (headers['content-type']?.[0]?.startsWith('application/json')) {
        try {
          body = JSON.parse(text)
        } catch {
          body = text
        }
      }
      resolve({
        status: Number(statusLine.slice(9, 12)),
        headers,
        challenge: headers['www-authenticate']?.join(', '),
        text,
        body,
        raw,
      })
    })
    // No half-close: some servers drop a request whose client has already sent FIN.
    socket.write(Buffer.from(requestText(probe), 'latin1'))
  })
}

/** Pieces of what the client sent that must never come back. */
function secretsOf(probe: Probe): string[] {
  const values = typeof probe.authorization === 'string' ? [probe.authorization] : []
  if (Array.isArray(probe.authorization)) values.push(...probe.authorization)
  // A DPoP proof is a credential too (RFC 9449): it must not come back either.
  for (const [name, value] of probe.headers ?? []) {
    if (name.toLowerCase() === 'dpop') values.push(value)
  }
  const pieces = new Set<string>()
  for (const value of values) {
    for (const piece of value.split(/[\s.,]+/)) if (piece.length >= 16) pieces.add(piece)
  }
  return [...pieces]
}

/** Checks that hold for every answer, whatever the case. */
export function expectHygiene(probe: Probe, answer: Answer): void {
  expect(answer.status, 'never a 500').not.toBe(500)
  expect(answer.status).toBeGreaterThanOrEqual(200)
  expect(answer.raw).not.toMatch(/\bat \S+ \(|node_modules|\/work\/|\.ts:\d+/)
  for (const piece of secretsOf(probe)) {
    expect(answer.raw.includes(piece), 'the token is never echoed').toBe(false)
  }
  const fromTollgate =
    typeof answer.body === 'object' && answer.body !== null && 'error_description' in answer.body
  if (answer.status >= 400 && fromTollgate) {
    expect(answer.headers['cache-control']).toEqual(['no-store'])
    expect(answer.headers['content-type']).toEqual(['application/json; charset=utf-8'])
    expect(Object.keys(answer.body as object).sort()).toEqual(['error', 'error_description'])
  }
  if (answer.status === 401) {
    for (const name of Object.keys(answer.headers)) {
      expect(name, 'no rate-limit fields on a 401').not.toMatch(/ratelimit/)
    }
    expect(answer.headers['retry-after']).toBeUndefined()
  }
  if (answer.status === 429 || answer.status === 503) {
    expect(answer.headers['retry-after']?.[0]).toMatch(/^[1-9]\d*$/)
  }
  expect(answer.headers['www-authenticate']?.length ?? 0, 'one challenge at most').toBeLessThan(2)
}

export function expectAnswer(answer: Answer, expected: Expected): void {
  expect(answer.status).toBe(expected.status)
  if (!('challenge' in expected)) {
    // Not part of this expectation.
  } else if (expected.challenge === undefined) expect(answer.challenge).toBeUndefined()
  else if (typeof expected.challenge === 'string') expect(answer.challenge).toBe(expected.challenge)
  else expect(answer.challenge).toMatch(expected.challenge)
  if ('body' in expected) expect(answer.body).toEqual(expected.body)
}

const REPEATED = 'more than one Authorization header'
const MALFORMED = 'malformed bearer credentials'

/**
 * The one answer a Fetch host cannot give as Node does. Its `Headers` join repeated fields with
 * ", ", so one Authorization field such as `Bearer a, Bearer b` reads exactly as two fields: both
 * are refused with the same 400 invalid_request, described as a repeated field where Node, which
 * sees one field, says "malformed". Only that description, only for one field holding ", ".
 */
function asNodeWouldSay(probe: Probe, answer: Answer): Answer {
  const single = typeof probe.authorization === 'string' && probe.authorization.includes(', ')
  if (!single || answer.status !== 400 || !answer.challenge?.includes(REPEATED)) return answer
  return {
    ...answer,
    challenge: answer.challenge.replace(REPEATED, MALFORMED),
    body: { error: 'invalid_request', error_description: MALFORMED },
  }
}

/** The apps on loopback, with what every case needs. */
export interface AppSet {
  /** The servers by framework name, in {@link APPS} order. */
  readonly servers: ReadonlyArray<readonly [string, Server]>
  /** Sends `probe` to every app, checks hygiene and that all answers agree; returns them. */
  askAll(probe: Probe): Promise<Answer[]>
  /** {@link AppSet.askAll}, then asserts `expected` on every answer. */
  expectAll(probe: Probe, expected: Expected): Promise<Answer[]>
}

/**
 * Starts the four apps with `options()` before the suite and closes them after it. `options` is
 * called in `beforeAll`, so it may read values (issuer URL) set by an earlier `beforeAll`.
 */
export function useApps(options: () => GateOptions): AppSet {
  const servers: Array<readonly [string, Server]> = []
  beforeAll(async () => {
    for (const [name, createApp] of APPS) {
      const server = createApp(options())
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      servers.push([name, server])
    }
  })
  afterAll(async () => {
    await Promise.all(
      servers.map(
        ([, server]) =>
          new Promise<void>((resolve) => {
            server.closeAllConnections()
            server.close(() => resolve())
          }),
      ),
    )
    servers.length = 0
  })

  async function askAll(probe: Probe): Promise<Answer[]> {
    const answers = await Promise.all(servers.map(([, server]) => send(server, probe)))
    const [first] = answers
    answers.forEach((raw, index) => {
      const name = servers[index]?.[0]
      const answer = name !== undefined && FETCH_HOSTS.has(name) ? asNodeWouldSay(probe, raw) : raw
      expectHygiene(probe, answer)
      // One contract, four frameworks: the same status, challenge and body everywhere.
      expect({ app: name, status: answer.status }).toEqual({ app: name, status: first?.status })
      expect({ app: name, challenge: answer.challenge }).toEqual({
        app: name,
        challenge: first?.challenge,
      })
      expect({ app: name, body: answer.body }).toEqual({ app: name, body: first?.body })
      expect({ app: name, retryAfter: answer.headers['retry-after'] !== undefined }).toEqual({
        app: name,
        retryAfter: first?.headers['retry-after'] !== undefined,
      })
    })
    return answers
  }

  return {
    servers,
    askAll,
    async expectAll(probe, expected) {
      const answers = await askAll(probe)
      for (const answer of answers) expectAnswer(answer, expected)
      return answers
    },
  }
}

/** A table row: name, the request (built once the issuer runs), what every app must answer. */
export type Case = readonly [name: string, probe: () => Probe | Promise<Probe>, expected: Expected]
