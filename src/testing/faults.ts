/**
 * Faults the test issuer injects on its certs and discovery endpoints, and how each is sent.
 *
 * @module
 */
import { type ServerResponse, validateHeaderName, validateHeaderValue } from 'node:http'

import { isFinalStatus, jsonReply, type Reply, sendReply } from './http.js'

/**
 * A way for the certs or discovery endpoint to misbehave. Delays use real timers, so
 * `vi.useFakeTimers()` in a test does not hold them back.
 */
export type TestIssuerFault =
  /** Answer `status` with `body` (default empty, `text/plain`) and extra `headers`. */
  | { kind: 'status'; status: number; body?: string; headers?: Record<string, string> }
  /** 200 with an HTML page, as a login page or a proxy's error page would be. */
  | { kind: 'html' }
  /** 200 `application/json` whose body is cut off mid-object. */
  | { kind: 'invalid-json' }
  /** 200 `{"keys":[]}`. Set on a realm, it concerns the certs endpoint only. */
  | { kind: 'empty-keys' }
  /** Wait `delayMs` before sending anything, then answer normally. */
  | { kind: 'slow-headers'; delayMs: number }
  /** Send the headers and the first half of the body, wait `delayMs`, then the rest. */
  | { kind: 'slow-body'; delayMs: number }
  /**
   * 200 `application/json`, `bytes` long (`{"keys":[],"padding":"aaaa…"}`), streamed without
   * `Content-Length`, so only a client that caps what it reads is protected.
   */
  | { kind: 'huge'; bytes: number }
  /** 302 to `location`. */
  | { kind: 'redirect'; location: string }
  /** Accept the request and never answer, until the issuer stops or closes. */
  | { kind: 'hang' }

// Captured at load, before any test installs fake timers.
const realSetTimeout = globalThis.setTimeout
const realClearTimeout = globalThis.clearTimeout
// Node turns longer timeouts into 1 ms (TimeoutOverflowWarning).
const MAX_DELAY_MS = 2 ** 31 - 1

const HTML_PAGE = '<!doctype html><html><head><title>Sign in</title></head><body></body></html>'
const TRUNCATED_JSON = '{"keys":[{"kty":"RSA","kid":'
const HUGE_PREFIX = '{"keys":[],"padding":"'
const HUGE_SUFFIX = '"}'
const FILLER = Buffer.alloc(64 * 1024, 'a')

function isDelay(value: unknown): boolean {
  return typeof value === 'number' && value >= 0 && value <= MAX_DELAY_MS
}

function headersAreValid(headers: unknown): boolean {
  if (headers === undefined) return true
  if (typeof headers !== 'object' || headers === null) return false
  try {
    for (const [name, value] of Object.entries(headers)) {
      validateHeaderName(name)
      validateHeaderValue(name, value)
    }
    return true
  } catch {
    return false
  }
}

function isWellFormed(fault: TestIssuerFault): boolean {
  switch (fault?.kind) {
    case 'status':
      return (
        isFinalStatus(fault.status) &&
        (fault.body === undefined || typeof fault.body === 'string') &&
        headersAreValid(fault.headers)
      )
    case 'slow-headers':
    case 'slow-body':
      return isDelay(fault.delayMs)
    case 'huge':
      return Number.isSafeInteger(fault.bytes) && fault.bytes >= 0
    case 'redirect':
      return typeof fault.location === 'string' && headersAreValid({ location: fault.location })
    case 'html':
    case 'invalid-json':
    case 'empty-keys':
    case 'hang':
      return true
    default:
      return false
  }
}

/** Throws a `TypeError` unless `fault` is a well-formed {@link TestIssuerFault}. */
export function checkFault(fault: TestIssuerFault): void {
  if (!isWellFormed(fault)) {
    throw new TypeError(`setFault(): malformed fault of kind "${String(fault?.kind)}"`)
  }
}

function later(res: ServerResponse, delayMs: number, action: () => void): void {
  const timer = realSetTimeout(() => {
    if (!res.destroyed) action()
  }, delayMs)
  res.once('close', () => realClearTimeout(timer))
}

function sendHuge(res: ServerResponse, bytes: number): void {
  res.writeHead(200, { 'content-type': 'application/json' })
  res.write(HUGE_PREFIX)
  let remaining = Math.max(0, bytes - HUGE_PREFIX.length - HUGE_SUFFIX.length)
  const pump = (): void => {
    while (remaining > 0) {
      if (res.destroyed) return
      const size = Math.min(remaining, FILLER.length)
      remaining -= size
      if (!res.write(FILLER.subarray(0, size))) {
        res.once('drain', pump)
        return
      }
    }
    if (!res.destroyed) res.end(HUGE_SUFFIX)
  }
  pump()
}

/**
 * The reply `fault` makes of `healthy` (the reply the endpoint would have sent), or `undefined`
 * when the fault writes to `res` itself (delays, streaming, hanging).
 */
export function answerFault(
  res: ServerResponse,
  fault: TestIssuerFault,
  healthy: Reply,
): Reply | undefined {
  switch (fault.kind) {
    case 'status':
      return {
        status: fault.status,
        headers: { 'content-type': 'text/plain; charset=utf-8', ...fault.headers },
        body: fault.body ?? '',
      }
    case 'html':
      return {
        status: 200,
        headers: { 'content-type': 'text/html; charset=utf-8' },
        body: HTML_PAGE,
      }
    case 'invalid-json':
      return { ...jsonReply(200, null), body: TRUNCATED_JSON }
    case 'empty-keys':
      return jsonReply(200, { keys: [] })
    case 'redirect':
      return { status: 302, headers: { location: fault.location }, body: '' }
    case 'slow-headers':
      later(res, fault.delayMs, () => sendReply(res, healthy))
      return undefined
    case 'slow-body': {
      const body = Buffer.from(healthy.body)
      const half = Math.floor(body.length / 2)
      res.writeHead(healthy.status, { ...healthy.headers, 'content-length': String(body.length) })
      res.write(body.subarray(0, half))
      later(res, fault.delayMs, () => res.end(body.subarray(half)))
      return undefined
    }
    case 'huge':
      sendHuge(res, fault.bytes)
      return undefined
    case 'hang':
      return undefined
  }
}
