/**
 * The options of {@link createSignalReceiver}, validated once at construction with messages that
 * name the option and what to change.
 *
 * @module
 */
import type { Gate } from '../gate/gate.js'
import { httpsUrlProblem } from '../token/issuers.js'
import {
  boolean,
  fail,
  integer,
  isRecord,
  optionalFunction,
  record,
  redisKeyPrefix,
  redisStoreOption,
  validateFor,
} from '../validate.js'
import type { SignalEvent } from './events.js'
import { MAPPABLE_FORMATS, type SubjectClaims } from './subject.js'

/** The ioredis client (`new Redis(…)` or `new Cluster(…)`), the one given to `revocation.store`. */
export interface SignalRedisClient {
  eval(script: string, numberOfKeys: number, ...args: (string | number)[]): Promise<unknown>
}

/** Options of a Shared Signals receiver. */
export interface SignalReceiverOptions {
  /** The gate whose revocation the signals drive (`gate.revoke()`, `gate.unrevoke()`). */
  readonly gate: Gate
  /**
   * The transmitter: its `issuer` (the SETs' exact `iss`). Its keys are read from the
   * `jwks_uri` of its `/.well-known/ssf-configuration` (SSF 1.0 §7.2), or from `jwksUri` when
   * given, with the same rotation, flood and outage rules as access-token keys.
   */
  readonly transmitter: {
    readonly issuer: string
    readonly jwksUri?: string
    /** Default: `{issuer}/.well-known/ssf-configuration` (SSF 1.0 §7.2). */
    readonly configurationUrl?: string
  }
  /** The SETs' `aud` must hold one of these (the receiver's audience at the transmitter). */
  readonly audience: string | readonly string[]
  /**
   * The exact `Authorization` header value the transmitter sends with each push (the
   * `authorization_header` given to it when the stream was created, SSF 1.0 §8.1.1.1). Several
   * while one is rotated out. Required to serve the push endpoint.
   */
  readonly authorization?: string | readonly string[]
  /** Which token claim each RFC 9493 format's value is. Default: `{ opaque: 'sub' }`. */
  readonly subjects?: SubjectClaims
  /**
   * Where `jti`s are remembered (a retry is applied once) and what `account-disabled` set is
   * recorded: this process (`'memory'`, default) or Redis, shared by the fleet: every instance
   * then applies a SET once, and one whose Redis does not answer replies 503.
   */
  readonly store?: 'memory' | { readonly redis: SignalRedisClient }
  /** Prefix of the Redis keys. Default `tollgate:ssf`. */
  readonly keyPrefix?: string
  /**
   * How old a SET may be (its `iat`), in seconds: a retry may come this long after the event, and
   * its `jti` is remembered this long. Default 86400 (a day); from 60 to 604800.
   */
  readonly maxAgeSeconds?: number
  /** Clock skew allowed on `iat`, in seconds. Default 60. */
  readonly clockToleranceSeconds?: number
  /**
   * How long the record of an `account-disabled` lasts, in seconds: at least the gate's
   * `revocation.maxTokenLifetimeSeconds`. Default 86400.
   */
  readonly maxTokenLifetimeSeconds?: number
  /** Largest accepted body (a SET), in bytes. Default 16384; from 1024 to 16384. */
  readonly maxBodyBytes?: number
  /** Deadline of a store call and of a key or configuration fetch, in ms. Default 2000. */
  readonly timeoutMs?: number
  /** Plain http to the transmitter beyond loopback (a trusted network only). Default `false`. */
  readonly allowInsecureHttp?: boolean
  /** The fetch used for the transmitter's configuration, keys, streams and polls. */
  readonly fetch?: typeof globalThis.fetch
  /** Audit and metrics listener; never receives a token. */
  readonly onEvent?: (event: SignalEvent) => void
}

/** Validated options. */
export interface NormalizedSignalOptions {
  readonly gate: Gate
  readonly issuer: string
  readonly jwksUri: string | undefined
  readonly configurationUrl: string
  readonly audiences: ReadonlySet<string>
  readonly authorization: ReadonlySet<string>
  readonly subjects: SubjectClaims
  readonly redis: SignalRedisClient | undefined
  readonly keyPrefix: string
  readonly maxAgeSeconds: number
  readonly clockToleranceSeconds: number
  readonly maxTokenLifetimeSeconds: number
  readonly maxBodyBytes: number
  readonly timeoutMs: number
  readonly allowInsecureHttp: boolean
  readonly fetch: typeof globalThis.fetch
  readonly onEvent: ((event: SignalEvent) => void) | undefined
}

const KEYS = [
  'gate',
  'transmitter',
  'audience',
  'authorization',
  'subjects',
  'store',
  'keyPrefix',
  'maxAgeSeconds',
  'clockToleranceSeconds',
  'maxTokenLifetimeSeconds',
  'maxBodyBytes',
  'timeoutMs',
  'allowInsecureHttp',
  'fetch',
  'onEvent',
]

function url(value: unknown, path: string, allowInsecureHttp: boolean): string {
  const problem =
    typeof value === 'string'
      ? httpsUrlProblem(
          value,
          allowInsecureHttp,
          'must be https (or set allowInsecureHttp: true on a trusted network)',
        )
      : 'must be an absolute https URL'
  if (problem !== undefined) fail(path, problem, value, { show: 'url' })
  return value as string
}

function strings(value: unknown, path: string, what: string, show: boolean): Set<string> {
  const list = typeof value === 'string' ? [value] : value
  if (
    !Array.isArray(list) ||
    list.length === 0 ||
    list.some((item) => typeof item !== 'string' || item === '' || item.length > 4096)
  ) {
    // An Authorization value is a secret: it is never shown.
    if (show) fail(path, `must be ${what}`, value, { show: true })
    fail(path, `must be ${what}`)
  }
  return new Set(list as string[])
}

/**
 * Validates the receiver's options.
 *
 * @throws TypeError `createSignalReceiver(options): "<option>" …` saying what to change.
 */
export function normalizeSignalOptions(options: SignalReceiverOptions): NormalizedSignalOptions {
  return validateFor('createSignalReceiver(options):', () => {
    const given = record(options, 'options', KEYS)
    const gate = given['gate'] as Gate | undefined
    if (
      !isRecord(gate) ||
      typeof gate.revoke !== 'function' ||
      typeof gate.unrevoke !== 'function'
    ) {
      fail('gate', 'must be a gate (createGate(…), or the adapter middleware’s .gate)', gate)
    }
    const allowInsecureHttp = boolean(given['allowInsecureHttp'], 'allowInsecureHttp', false)
    const transmitter = record(given['transmitter'], 'transmitter', [
      'issuer',
      'jwksUri',
      'configurationUrl',
    ])
    const issuer = url(transmitter['issuer'], 'transmitter.issuer', allowInsecureHttp)
    const jwksUri =
      transmitter['jwksUri'] === undefined
        ? undefined
        : url(transmitter['jwksUri'], 'transmitter.jwksUri', allowInsecureHttp)
    const configurationUrl =
      transmitter['configurationUrl'] === undefined
        ? `${issuer.replace(/\/$/, '')}/.well-known/ssf-configuration`
        : url(transmitter['configurationUrl'], 'transmitter.configurationUrl', allowInsecureHttp)
    const audiences = strings(
      given['audience'],
      'audience',
      'a non-empty string or array of them',
      true,
    )
    const authorization =
      given['authorization'] === undefined
        ? new Set<string>()
        : strings(
            given['authorization'],
            'authorization',
            'the Authorization header value the transmitter sends (a string, or an array while rotating)',
            false,
          )
    const subjectsGiven =
      given['subjects'] === undefined ? {} : record(given['subjects'], 'subjects', MAPPABLE_FORMATS)
    for (const [format, claim] of Object.entries(subjectsGiven)) {
      if (claim !== 'sub' && claim !== 'sid') {
        fail(`subjects.${format}`, "must be 'sub' or 'sid'", claim, { show: true })
      }
    }
    const fetchGiven = optionalFunction<typeof globalThis.fetch>(
      given['fetch'],
      'fetch',
      '(input, init)',
    )
    return Object.freeze({
      gate: gate as Gate,
      issuer,
      jwksUri,
      configurationUrl,
      audiences,
      authorization,
      subjects: Object.freeze({ ...subjectsGiven }) as SubjectClaims,
      redis: redisStoreOption<SignalRedisClient>(given['store'], 'store'),
      keyPrefix: redisKeyPrefix(given['keyPrefix'], 'keyPrefix', 'tollgate:ssf'),
      maxAgeSeconds: integer(given['maxAgeSeconds'], 'maxAgeSeconds', {
        min: 60,
        max: 604_800,
        fallback: 86_400,
      }),
      clockToleranceSeconds: integer(given['clockToleranceSeconds'], 'clockToleranceSeconds', {
        min: 0,
        max: 300,
        fallback: 60,
      }),
      maxTokenLifetimeSeconds: integer(
        given['maxTokenLifetimeSeconds'],
        'maxTokenLifetimeSeconds',
        { min: 60, max: 2_592_000, fallback: 86_400 },
      ),
      maxBodyBytes: integer(given['maxBodyBytes'], 'maxBodyBytes', {
        min: 1024,
        max: 16_384,
        fallback: 16_384,
      }),
      timeoutMs: integer(given['timeoutMs'], 'timeoutMs', { min: 50, max: 60_000, fallback: 2000 }),
      allowInsecureHttp,
      fetch: fetchGiven ?? ((...args: Parameters<typeof fetch>) => globalThis.fetch(...args)),
      onEvent: optionalFunction<(event: SignalEvent) => void>(
        given['onEvent'],
        'onEvent',
        '(event)',
      ),
    })
  })
}
