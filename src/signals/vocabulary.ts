/**
 * The names the Shared Signals Framework 1.0, CAEP 1.0 and RISC 1.0 give to events, and what
 * tollgate does with each: one table, so that the receiver, its events and the guide agree.
 *
 * @module
 */

const CAEP = 'https://schemas.openid.net/secevent/caep/event-type/'
const RISC = 'https://schemas.openid.net/secevent/risc/event-type/'
const SSF = 'https://schemas.openid.net/secevent/ssf/event-type/'

/** SSF 1.0 §8.1.4: the event a transmitter sends when the receiver asks it to verify the stream. */
export const VERIFICATION_EVENT = `${SSF}verification`
/** SSF 1.0 §8.1.5: the transmitter changed the stream's status (enabled, paused, disabled). */
export const STREAM_UPDATED_EVENT = `${SSF}stream-updated`

/**
 * What an event does to the gate:
 * - `session`: the session named (`sid`), else the subject's tokens issued up to the event;
 * - `subject`: the subject's tokens issued up to the event;
 * - `disable`: as `subject`, recorded so that `account-enabled` can lift it;
 * - `enable`: lifts what `disable` set;
 * - `claims`: the subject's cached verdicts are dropped (the next request is judged afresh);
 * - `stream`: about the stream itself (verification, status), not about a subject.
 */
export type SignalAction = 'session' | 'subject' | 'disable' | 'enable' | 'claims' | 'stream'

/** The events tollgate acts on, by URI; any other is acknowledged and reported. */
export const EVENT_ACTIONS: ReadonlyMap<string, SignalAction> = new Map<string, SignalAction>([
  [`${CAEP}session-revoked`, 'session'],
  [`${CAEP}credential-change`, 'subject'],
  [`${CAEP}token-claims-change`, 'claims'],
  [`${CAEP}assurance-level-change`, 'claims'],
  [`${RISC}credential-compromise`, 'subject'],
  [`${RISC}account-disabled`, 'disable'],
  [`${RISC}account-purged`, 'subject'],
  [`${RISC}sessions-revoked`, 'subject'],
  [`${RISC}account-enabled`, 'enable'],
  [VERIFICATION_EVENT, 'stream'],
  [STREAM_UPDATED_EVENT, 'stream'],
])

/** The event types a receiver asks for when it creates a stream: every one it acts on. */
export const EVENTS_ACTED_ON: readonly string[] = [...EVENT_ACTIONS.keys()].filter(
  (uri) => uri !== VERIFICATION_EVENT && uri !== STREAM_UPDATED_EVENT,
)

/** RFC 8935 §2.4 and RFC 8936 §2.4: the error codes a recipient answers a refused SET with. */
export type SetErrorCode =
  | 'invalid_request'
  | 'invalid_key'
  | 'invalid_issuer'
  | 'invalid_audience'
  | 'authentication_failed'
  | 'access_denied'
