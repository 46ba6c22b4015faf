/**
 * Delegation at the gate (RFC 8693 §4.1, §4.4): who acts for the user of an admitted token. The
 * `act` claim of a verified token becomes `auth.actor` (the current actor, with the actors before
 * it nested as `actor.actor`); the gate's `delegation` option says which actors may act for users
 * on this API and how long a chain may be, and refuses the others with 403 and a reason. A
 * token's `may_act` (§4.4), where present, must name the actor acting.
 *
 * @module
 */
import { ActorRefusedError } from '../errors.js'
import { actorName, chainDepth, MAX_READ_DEPTH } from '../token/actor.js'
import type { Actor, Admission } from '../types.js'
import { fail, integer, isRecord, record } from '../validate.js'

/** One actor the gate lets act for users: by `act.sub`, or by a record naming more of it. */
export type AllowedActor =
  | string
  | {
      /** `act.sub`. */
      readonly subject?: string
      /** `act.client_id`. */
      readonly clientId?: string
      /**
       * `act.iss`: the issuer that named the actor. Default: the token's own issuer (an `act`
       * naming another issuer matches only an entry that names that issuer).
       */
      readonly issuer?: string
    }

/** The gate's `delegation` option. */
export interface DelegationOptions {
  /**
   * Actors who may act for users on this API: each is matched against every actor of the chain
   * (`act`, and the `act` nested in it). A string matches `act.sub` (or `act.client_id`) of an
   * actor named by the token's own issuer. Default: any actor (only `maxChainDepth` applies).
   */
  readonly allowedActors?: readonly AllowedActor[]
  /** Longest chain of actors admitted (`act` is 1, `act.act` 2, …). Default 1; 0 refuses every delegated token. */
  readonly maxChainDepth?: number
  /**
   * The exchanger `auth.tokenFor(target)` uses: `createTokenExchange({ … })` from
   * `tollgate/client`, with this API's own client credentials.
   */
  readonly exchange?: {
    exchange(subjectToken: string, target: string | Record<string, unknown>): Promise<string>
  }
}

interface NormalizedActorEntry {
  readonly subject: string | undefined
  readonly clientId: string | undefined
  readonly issuer: string | undefined
}

/** {@link DelegationOptions}, validated. */
export interface NormalizedDelegationOptions {
  readonly allowedActors: readonly NormalizedActorEntry[] | undefined
  readonly maxChainDepth: number
  readonly exchange: DelegationOptions['exchange']
}

/** A gate without the `delegation` option: any well-formed chain tollgate reads. */
export const ANY_ACTOR: NormalizedDelegationOptions = Object.freeze({
  allowedActors: undefined,
  maxChainDepth: MAX_READ_DEPTH,
  exchange: undefined,
})

/**
 * Validates the gate's `delegation` option (`createGate(options):` messages).
 *
 * @throws TypeError naming the option and what to change.
 */
export function normalizeDelegationOptions(
  value: unknown,
): NormalizedDelegationOptions | undefined {
  if (value === undefined) return undefined
  const options = record(value, 'delegation', ['allowedActors', 'maxChainDepth', 'exchange'])
  let allowedActors: NormalizedActorEntry[] | undefined
  const list = options['allowedActors']
  if (list !== undefined) {
    if (!Array.isArray(list) || list.length === 0) {
      fail(
        'delegation.allowedActors',
        'must be a non-empty array of actors (a string: act.sub; or { subject, clientId, issuer })',
        list,
      )
    }
    allowedActors = list.map((entry: unknown, index) => {
      const path = `delegation.allowedActors[${index}]`
      if (typeof entry === 'string') {
        if (entry === '') fail(path, 'must be a non-empty string', entry)
        return { subject: entry, clientId: undefined, issuer: undefined }
      }
      const fields = record(entry, path, ['subject', 'clientId', 'issuer'])
      for (const name of ['subject', 'clientId', 'issuer']) {
        const field = fields[name]
        if (field !== undefined && (typeof field !== 'string' || field === '')) {
          fail(`${path}.${name}`, 'must be a non-empty string', field)
        }
      }
      if (fields['subject'] === undefined && fields['clientId'] === undefined) {
        fail(path, 'must name the actor: "subject" (act.sub) or "clientId" (act.client_id)')
      }
      return {
        subject: fields['subject'] as string | undefined,
        clientId: fields['clientId'] as string | undefined,
        issuer: fields['issuer'] as string | undefined,
      }
    })
  }
  const exchange = options['exchange']
  if (
    exchange !== undefined &&
    !(isRecord(exchange) && typeof exchange['exchange'] === 'function')
  ) {
    fail(
      'delegation.exchange',
      "must be an exchanger: createTokenExchange({ … }) from 'tollgate/client'",
      exchange,
    )
  }
  return Object.freeze({
    allowedActors:
      allowedActors && Object.freeze(allowedActors.map((entry) => Object.freeze(entry))),
    maxChainDepth: integer(options['maxChainDepth'], 'delegation.maxChainDepth', {
      fallback: 1,
      min: 0,
      max: MAX_READ_DEPTH,
    }),
    exchange: exchange as DelegationOptions['exchange'],
  })
}

function matches(entry: NormalizedActorEntry, actor: Actor, tokenIssuer: string): boolean {
  // An actor named by another issuer is that issuer's: only an entry naming it matches.
  if ((actor.issuer ?? tokenIssuer) !== (entry.issuer ?? tokenIssuer)) return false
  if (entry.subject !== undefined && entry.clientId !== undefined) {
    return actor.subject === entry.subject && actor.clientId === entry.clientId
  }
  if (entry.clientId !== undefined) return actor.clientId === entry.clientId
  return (
    actor.subject === entry.subject ||
    (actor.subject === undefined && actor.clientId === entry.subject)
  )
}

/** Why a delegated token is refused: what its error is built from, kept per admission. */
interface Judgement {
  readonly reason:
    | 'actor_malformed'
    | 'actor_chain_too_deep'
    | 'actor_not_allowed'
    | 'actor_not_permitted'
  readonly detail: Readonly<Record<string, unknown>>
}

/** The gate's delegation step: the refusal of an admission, or `undefined` when it may proceed. */
export interface DelegationStep {
  refusal(auth: Admission): ActorRefusedError | undefined
}

/** Builds the delegation step of a gate with a `delegation` option. */
export function createDelegationStep(options: NormalizedDelegationOptions): DelegationStep {
  const { allowedActors, maxChainDepth } = options
  // Judged once per admission: a cached token's verdict is shared by every request presenting it.
  const judged = new WeakMap<Admission, Judgement | false>()

  function judge(auth: Admission): Judgement | false {
    const actor = auth.actor
    if (actor === undefined) return { reason: 'actor_malformed', detail: { claim: 'act' } }
    const depth = chainDepth(actor)
    if (depth > maxChainDepth) {
      return {
        reason: 'actor_chain_too_deep',
        detail: { depth, maxChainDepth, actor: actorName(actor) },
      }
    }
    if (allowedActors !== undefined) {
      for (let at: Actor | undefined = actor; at !== undefined; at = at.actor) {
        const current = at
        if (!allowedActors.some((entry) => matches(entry, current, auth.issuer))) {
          return {
            reason: 'actor_not_allowed',
            detail: { actor: actorName(current), actorIssuer: current.issuer ?? auth.issuer },
          }
        }
      }
    }
    // RFC 8693 §4.4: the token names who may act for its subject; the actor acting must be it.
    const mayAct = auth.claims['may_act']
    if (mayAct !== undefined) {
      const allowed =
        isRecord(mayAct) &&
        (mayAct['sub'] !== undefined || mayAct['client_id'] !== undefined) &&
        (mayAct['sub'] === undefined || mayAct['sub'] === actor.subject) &&
        (mayAct['client_id'] === undefined || mayAct['client_id'] === actor.clientId) &&
        (mayAct['iss'] ?? auth.issuer) === (actor.issuer ?? auth.issuer)
      if (!allowed) return { reason: 'actor_not_permitted', detail: { actor: actorName(actor) } }
    }
    return false
  }

  return {
    refusal(auth) {
      if (auth.claims['act'] === undefined) return undefined
      let verdict = judged.get(auth)
      if (verdict === undefined) {
        verdict = judge(auth)
        judged.set(auth, verdict)
      }
      // A new error per request: the refusal point adds this request's challenge to it.
      return verdict === false ? undefined : new ActorRefusedError(verdict)
    },
  }
}
