/**
 * A Shared Signals transmitter for tests and the development provider (OpenID SSF 1.0, CAEP 1.0,
 * RISC 1.0): a loopback server with the configuration document (`/.well-known/ssf-configuration`,
 * SSF 1.0 §7), its keys (`/jwks`), and an RFC 8936 poll endpoint; SETs (RFC 8417) signed with
 * jose, pushed (RFC 8935) to a receiver's endpoint or queued for polling. Knobs let a test send
 * what an attacker would (another key, `alg: none`, a forged `iss`, a replayed `jti`).
 *
 * @module
 */
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'

import { CompactSign, type CryptoKey, exportJWK, generateKeyPair, type JWK } from 'jose'

import { jsonReply, listenOnLoopback, type Reply, sendReply } from './http.js'

const CAEP = 'https://schemas.openid.net/secevent/caep/event-type/'
const RISC = 'https://schemas.openid.net/secevent/risc/event-type/'

/** The event types the transmitter names by short name. */
export const SSF_EVENTS = {
  sessionRevoked: `${CAEP}session-revoked`,
  credentialChange: `${CAEP}credential-change`,
  tokenClaimsChange: `${CAEP}token-claims-change`,
  assuranceLevelChange: `${CAEP}assurance-level-change`,
  credentialCompromise: `${RISC}credential-compromise`,
  accountDisabled: `${RISC}account-disabled`,
  accountEnabled: `${RISC}account-enabled`,
  accountPurged: `${RISC}account-purged`,
  sessionsRevoked: `${RISC}sessions-revoked`,
  verification: 'https://schemas.openid.net/secevent/ssf/event-type/verification',
  streamUpdated: 'https://schemas.openid.net/secevent/ssf/event-type/stream-updated',
} as const

/** How the transmitter delivers: pushes to a receiver's endpoint, or queues for its poll. */
export type TestTransmitterDelivery =
  | { readonly method: 'push'; readonly endpoint: string; readonly authorization: string }
  | { readonly method: 'poll' }

/** Options of {@link createTestTransmitter}. */
export interface TestTransmitterOptions {
  /** The receiver's audience (the SETs' `aud`). */
  readonly audience: string
  /** How SETs leave. Default: queued for polling. */
  readonly delivery?: TestTransmitterDelivery
  /** The `Authorization` header value the poll endpoint requires. Default: none required. */
  readonly pollAuthorization?: string
  /** The `Authorization` header value the stream management endpoints require. Default: none. */
  readonly managementAuthorization?: string
}

/** What to sign, beyond the event and subject: an attacker's variations. */
export interface TestSetOverrides {
  /** Claims to add or replace (`iss`, `aud`, `iat`, `jti`…); `undefined` removes one. */
  readonly claims?: Readonly<Record<string, unknown>>
  /** Header members to add or replace (`typ`…); `undefined` removes one. */
  readonly header?: Readonly<Record<string, unknown>>
  /** `other`: a key the transmitter never published; `none`: unsigned (`alg: none`). */
  readonly key?: 'current' | 'other' | 'none'
}

/** A SET as the transmitter built it. */
export interface TestSet {
  readonly jti: string
  readonly token: string
}

/** A test SSF transmitter. */
export interface TestTransmitter {
  /** The transmitter's issuer: `http://127.0.0.1:PORT`. */
  readonly issuer: string
  /** `{issuer}/jwks`. */
  readonly jwksUri: string
  /** `{issuer}/poll` (RFC 8936). */
  readonly pollEndpoint: string
  /** Signs a SET with one event. */
  sign(
    event: string,
    subject: Readonly<Record<string, unknown>>,
    eventPayload?: Readonly<Record<string, unknown>>,
    overrides?: TestSetOverrides,
  ): Promise<TestSet>
  /** Delivers a SET (push, or queue for poll); resolves to the push answer's status (poll: 0). */
  deliver(set: TestSet): Promise<{ readonly status: number; readonly body: string }>
  /** Signs and delivers `session-revoked` for a user's session (CAEP 1.0 §3.1). */
  sessionRevoked(user: {
    readonly iss: string
    readonly sub: string
    readonly sid?: string
  }): Promise<TestSet>
  /** Signs and delivers RISC `account-disabled` (RISC 1.0 §2.2). */
  accountDisabled(user: { readonly iss: string; readonly sub: string }): Promise<TestSet>
  /** Signs and delivers RISC `account-enabled`. */
  accountEnabled(user: { readonly iss: string; readonly sub: string }): Promise<TestSet>
  /** Rotates to a new published signing key. */
  rotate(): Promise<void>
  /** SETs queued for polling and not acknowledged yet, by `jti`. */
  readonly queued: ReadonlyMap<string, string>
  /** `jti`s the receiver acknowledged by poll, and the errors it reported (RFC 8936 §2.4). */
  readonly acknowledged: ReadonlySet<string>
  readonly errors: ReadonlyMap<string, { readonly err: string; readonly description: string }>
  /** How many poll requests arrived. */
  readonly polls: number
  /** How many times its keys (`/jwks`) were fetched. */
  readonly jwksFetches: number
  /**
   * The next `times` poll requests are answered with `status` (and no SETs), or with `answer`
   * as the JSON body instead of the queued SETs (a transmitter gone wrong).
   */
  failPolls(fault: {
    readonly times: number
    readonly status?: number
    readonly answer?: unknown
  }): void
  close(): Promise<void>
}

interface SigningKey {
  readonly kid: string
  readonly privateKey: CryptoKey
  readonly jwk: JWK
}

async function newKey(): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256')
  const kid = randomUUID()
  return {
    kid,
    privateKey,
    jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' },
  }
}

const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > 1_048_576) throw new Error('too large')
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/**
 * Starts a test transmitter on a free loopback port.
 *
 * @example
 * ```ts
 * const transmitter = await createTestTransmitter({ audience: 'https://gateway.example' })
 * const set = await transmitter.sign(SSF_EVENTS.accountDisabled, { format: 'opaque', id: 'alice' })
 * await transmitter.close()
 * ```
 */
export async function createTestTransmitter(
  options: TestTransmitterOptions,
): Promise<TestTransmitter> {
  let keys = [await newKey()]
  const other = await newKey()
  const queued = new Map<string, string>()
  const acknowledged = new Set<string>()
  const errors = new Map<string, { err: string; description: string }>()
  let polls = 0
  let jwksFetches = 0
  let fault: { times: number; status?: number; answer?: unknown } | undefined
  /** Long polls waiting for a SET (RFC 8936 §2.4 `returnImmediately: false`). */
  const waiting = new Set<() => void>()
  const LONG_POLL_MS = 2000
  let issuer = ''
  let delivery: TestTransmitterDelivery = options.delivery ?? { method: 'poll' as const }
  /** The one stream (SSF 1.0 §8.1.1), once a receiver created it. */
  let stream: Record<string, unknown> | undefined
  let streamStatus = 'enabled'

  async function poll(body: unknown, authorization: unknown): Promise<Reply> {
    polls += 1
    if (options.pollAuthorization !== undefined && authorization !== options.pollAuthorization) {
      return jsonReply(401, { error: 'invalid_client' })
    }
    if (fault !== undefined && fault.times > 0) {
      fault.times -= 1
      if (fault.answer !== undefined) return jsonReply(200, fault.answer)
      return jsonReply(fault.status ?? 500, { error: 'server_error' })
    }
    if (typeof body !== 'object' || body === null)
      return jsonReply(400, { error: 'invalid_request' })
    const request = body as {
      ack?: unknown
      setErrs?: unknown
      maxEvents?: unknown
    }
    for (const jti of Array.isArray(request.ack) ? request.ack : []) {
      if (typeof jti === 'string' && queued.delete(jti)) acknowledged.add(jti)
    }
    const setErrs = request.setErrs
    if (typeof setErrs === 'object' && setErrs !== null) {
      for (const [jti, error] of Object.entries(
        setErrs as Record<string, { err: string; description: string }>,
      )) {
        if (queued.delete(jti)) errors.set(jti, error)
      }
    }
    if ((body as { returnImmediately?: unknown }).returnImmediately !== true && queued.size === 0) {
      await new Promise<void>((resolve) => {
        const done = () => {
          waiting.delete(done)
          clearTimeout(timer)
          resolve()
        }
        const timer = setTimeout(done, LONG_POLL_MS)
        waiting.add(done)
      })
    }
    const max = typeof request.maxEvents === 'number' ? request.maxEvents : queued.size
    const sets = Object.fromEntries([...queued].slice(0, max))
    return jsonReply(200, { sets, moreAvailable: queued.size > Object.keys(sets).length })
  }

  /** SSF 1.0 §8.1: the stream's configuration, status and verification. */
  async function manage(
    method: string,
    path: string,
    text: string,
    authorization: unknown,
  ): Promise<Reply> {
    if (
      options.managementAuthorization !== undefined &&
      authorization !== options.managementAuthorization
    ) {
      return jsonReply(401, { error: 'invalid_client' })
    }
    let body: Record<string, unknown> = {}
    try {
      body = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>)
    } catch {
      return jsonReply(400, { error: 'invalid_request' })
    }
    if (path === '/streams' && method === 'POST') {
      const requested = body['delivery'] as
        | { method?: string; endpoint_url?: string; authorization_header?: string }
        | undefined
      if (requested?.method === 'urn:ietf:rfc:8935' && typeof requested.endpoint_url === 'string') {
        delivery = {
          method: 'push',
          endpoint: requested.endpoint_url,
          authorization: requested.authorization_header ?? '',
        }
      } else {
        delivery = { method: 'poll' }
      }
      stream = {
        stream_id: randomUUID(),
        iss: issuer,
        aud: options.audience,
        delivery:
          delivery.method === 'push'
            ? { method: 'urn:ietf:rfc:8935', endpoint_url: delivery.endpoint }
            : { method: 'urn:ietf:rfc:8936', endpoint_url: `${issuer}/poll` },
        events_supported: Object.values(SSF_EVENTS),
        events_requested: body['events_requested'] ?? [],
        events_delivered: body['events_requested'] ?? [],
      }
      return jsonReply(201, stream)
    }
    if (stream === undefined) return jsonReply(404, { error: 'not_found' })
    const streamId = stream['stream_id'] as string
    if (path === '/streams' && method === 'GET') return jsonReply(200, stream)
    if (path === '/streams' && method === 'PATCH') {
      if (body['stream_id'] !== streamId) return jsonReply(404, { error: 'not_found' })
      const { stream_id: _, ...changes } = body
      stream = { ...stream, ...changes }
      if (Array.isArray(changes['events_requested'])) {
        stream['events_delivered'] = changes['events_requested']
      }
      return jsonReply(200, stream)
    }
    if (path === '/status' && method === 'GET') {
      return jsonReply(200, { stream_id: streamId, status: streamStatus })
    }
    if (path === '/status' && method === 'POST') {
      if (typeof body['status'] === 'string') streamStatus = body['status']
      const subject = { format: 'opaque', id: streamId }
      await deliver(await sign(SSF_EVENTS.streamUpdated, subject, { status: streamStatus }))
      return jsonReply(200, { stream_id: streamId, status: streamStatus })
    }
    if (path === '/verify' && method === 'POST') {
      const state = typeof body['state'] === 'string' ? { state: body['state'] } : {}
      await deliver(await sign(SSF_EVENTS.verification, { format: 'opaque', id: streamId }, state))
      return { status: 204, headers: {}, body: '' }
    }
    return jsonReply(405, { error: 'method_not_allowed' })
  }

  const server = await listenOnLoopback((req, res) => {
    const path = (req.url ?? '').split('?', 1)[0]
    if (req.method === 'GET' && path === '/.well-known/ssf-configuration') {
      return sendReply(
        res,
        jsonReply(200, {
          spec_version: '1_0',
          issuer,
          jwks_uri: `${issuer}/jwks`,
          delivery_methods_supported: ['urn:ietf:rfc:8935', 'urn:ietf:rfc:8936'],
          configuration_endpoint: `${issuer}/streams`,
          status_endpoint: `${issuer}/status`,
          verification_endpoint: `${issuer}/verify`,
        }),
      )
    }
    if (req.method === 'GET' && path === '/jwks') {
      jwksFetches += 1
      return sendReply(res, jsonReply(200, { keys: keys.map((key) => key.jwk) }))
    }
    if (path === '/streams' || path === '/status' || path === '/verify') {
      bodyOf(req).then(
        (text) =>
          manage(req.method ?? 'GET', path, text, req.headers.authorization).then((reply) =>
            sendReply(res, reply),
          ),
        () => sendReply(res, jsonReply(400, { error: 'invalid_request' })),
      )
      return
    }
    if (req.method === 'POST' && path === '/poll') {
      bodyOf(req).then(
        (text) => {
          let body: unknown
          try {
            body = JSON.parse(text)
          } catch {
            body = undefined
          }
          return poll(body, req.headers.authorization).then((reply) => sendReply(res, reply))
        },
        () => sendReply(res, jsonReply(400, { error: 'invalid_request' })),
      )
      return
    }
    sendReply(res, jsonReply(404, { error: 'not_found' }))
  }, 0)
  issuer = server.url

  async function sign(
    event: string,
    subject: Readonly<Record<string, unknown>>,
    eventPayload: Readonly<Record<string, unknown>> = {},
    overrides: TestSetOverrides = {},
  ): Promise<TestSet> {
    const now = Math.floor(Date.now() / 1000)
    const key = overrides.key === 'other' ? other : (keys.at(-1) as SigningKey)
    const claims: Record<string, unknown> = {
      iss: issuer,
      aud: options.audience,
      iat: now,
      jti: randomUUID(),
      sub_id: subject,
      events: { [event]: { event_timestamp: now, ...eventPayload } },
      ...overrides.claims,
    }
    const header: Record<string, unknown> = {
      alg: overrides.key === 'none' ? 'none' : 'ES256',
      typ: 'secevent+jwt',
      kid: key.kid,
      ...overrides.header,
    }
    for (const record of [claims, header]) {
      for (const name of Object.keys(record)) if (record[name] === undefined) delete record[name]
    }
    const payload = new TextEncoder().encode(JSON.stringify(claims))
    const token =
      overrides.key === 'none'
        ? `${encode(header)}.${Buffer.from(payload).toString('base64url')}.`
        : await new CompactSign(payload)
            .setProtectedHeader(header as { alg: string })
            .sign(key.privateKey)
    return { jti: claims.jti as string, token }
  }

  async function deliver(set: TestSet) {
    if (delivery.method === 'poll') {
      queued.set(set.jti, set.token)
      for (const wake of [...waiting]) wake()
      return { status: 0, body: '' }
    }
    const response = await fetch(delivery.endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/secevent+jwt',
        accept: 'application/json',
        authorization: delivery.authorization,
      },
      body: set.token,
    })
    return { status: response.status, body: await response.text() }
  }

  const userOf = (user: { iss: string; sub: string }) => ({
    format: 'iss_sub',
    iss: user.iss,
    sub: user.sub,
  })
  async function send(event: string, subject: Record<string, unknown>): Promise<TestSet> {
    const set = await sign(event, subject)
    await deliver(set)
    return set
  }

  return {
    issuer,
    jwksUri: `${issuer}/jwks`,
    pollEndpoint: `${issuer}/poll`,
    sign,
    deliver,
    sessionRevoked: (user) =>
      send(
        SSF_EVENTS.sessionRevoked,
        user.sid === undefined
          ? userOf(user)
          : { format: 'complex', user: userOf(user), session: { format: 'opaque', id: user.sid } },
      ),
    accountDisabled: (user) => send(SSF_EVENTS.accountDisabled, userOf(user)),
    accountEnabled: (user) => send(SSF_EVENTS.accountEnabled, userOf(user)),
    async rotate() {
      keys = [...keys.slice(-1), await newKey()]
    },
    queued,
    acknowledged,
    errors,
    get polls() {
      return polls
    },
    get jwksFetches() {
      return jwksFetches
    },
    failPolls(given) {
      fault = { ...given }
    },
    async close() {
      for (const wake of [...waiting]) wake()
      await server.close()
    },
  }
}

/** What of an oidc-provider session the development provider hands over when a user signs out. */
export interface SignedOutSession {
  readonly accountId?: string | undefined
  /** oidc-provider's per-client authorizations, each with the `sid` that client's tokens carry. */
  readonly authorizations?:
    | Readonly<Record<string, { readonly sid?: string | undefined }>>
    | undefined
}

/**
 * What the development provider sends when a user signs out at its page: CAEP `session-revoked`
 * for the user (every token of the user issued up to the sign-out is refused), or, with
 * `bySession` (for providers whose access tokens carry `sid`), one for each session id the
 * user's clients were given. Resolves once every SET was delivered; never rejects (a receiver
 * that is down must not break the sign-out page).
 */
export async function transmitSignOut(
  transmitter: TestTransmitter,
  issuer: string,
  session: SignedOutSession,
  options: { readonly bySession?: boolean } = {},
): Promise<void> {
  const sub = session.accountId
  if (sub === undefined) return
  const sids =
    options.bySession !== true
      ? []
      : [
          ...new Set(
            Object.values(session.authorizations ?? {}).flatMap((entry) =>
              typeof entry.sid === 'string' ? [entry.sid] : [],
            ),
          ),
        ]
  const sends =
    sids.length === 0
      ? [transmitter.sessionRevoked({ iss: issuer, sub })]
      : sids.map((sid) => transmitter.sessionRevoked({ iss: issuer, sub, sid }))
  await Promise.allSettled(sends)
}
