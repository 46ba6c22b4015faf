/**
 * The subject of a SET (RFC 9493 Subject Identifiers, SSF 1.0 §3 complex subjects) turned into
 * what the gate's revocation matches: a user (`sub`) or a sign-in session (`sid`) of a token
 * issuer. Which claim an identifier format stands for is the deployment's choice (`subjects`):
 * `iss_sub` is always the token's `iss` and `sub`; `opaque` is `sub` unless configured; `email`,
 * `phone_number`, `account`, `uri` and `did` name nothing until configured, because an access
 * token's `sub` is rarely an email address and a wrong mapping would revoke nobody (or somebody
 * else).
 *
 * @module
 */

/** The formats of RFC 9493 a deployment may map to a token claim. */
export const MAPPABLE_FORMATS = [
  'opaque',
  'email',
  'phone_number',
  'account',
  'uri',
  'did',
] as const
export type MappableFormat = (typeof MAPPABLE_FORMATS)[number]

/** Which claim of the gate's tokens each identifier format's value is. */
export type SubjectClaims = Readonly<Partial<Record<MappableFormat, 'sub' | 'sid'>>>

/** One thing to act on: tokens whose `kind` claim is `value`, of `issuer` (else the gate's only one). */
export interface SubjectTarget {
  readonly issuer: string | undefined
  readonly kind: 'sub' | 'sid'
  readonly value: string
}

/** A subject that is no RFC 9493 identifier (the SET is `invalid_request`). */
export class MalformedSubject extends Error {
  constructor() {
    super('malformed subject identifier')
    this.name = 'MalformedSubject'
  }
}

const MAX_VALUE_LENGTH = 1024
/** The members of a complex subject (SSF 1.0 §3.3) that name a user. */
const USER_MEMBERS = ['user'] as const
const VALUE_MEMBER: Readonly<Record<MappableFormat, string>> = {
  opaque: 'id',
  email: 'email',
  phone_number: 'phone_number',
  account: 'uri',
  uri: 'uri',
  did: 'url',
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

function text(value: unknown): string {
  if (typeof value !== 'string' || value === '' || value.length > MAX_VALUE_LENGTH) {
    throw new MalformedSubject()
  }
  return value
}

/**
 * The targets one simple identifier names, as `role` (a user, or a session member of a complex
 * subject, which is always a `sid`).
 */
function simple(
  id: unknown,
  claims: SubjectClaims,
  role: 'user' | 'session',
  depth: number,
): SubjectTarget[] {
  if (!isObject(id)) throw new MalformedSubject()
  const format = id['format']
  if (typeof format !== 'string') throw new MalformedSubject()
  if (format === 'iss_sub') {
    const issuer = text(id['iss'])
    const value = text(id['sub'])
    return [{ issuer, kind: role === 'session' ? 'sid' : 'sub', value }]
  }
  if (format === 'aliases') {
    // RFC 9493 §3.2.2: every identifier names the same subject; an alias may not nest.
    const identifiers = id['identifiers']
    if (depth > 0 || !Array.isArray(identifiers) || identifiers.length === 0) {
      throw new MalformedSubject()
    }
    if (identifiers.length > 16) throw new MalformedSubject()
    return identifiers.flatMap((item) => simple(item, claims, role, depth + 1))
  }
  if (!Object.hasOwn(VALUE_MEMBER, format)) {
    // RFC 9493 §8: a recipient ignores formats it does not know; the SET names nobody it can act on.
    return []
  }
  const mappable = format as MappableFormat
  const value = text(id[VALUE_MEMBER[mappable]])
  if (role === 'session') return [{ issuer: undefined, kind: 'sid', value }]
  const kind = claims[mappable] ?? (mappable === 'opaque' ? 'sub' : undefined)
  return kind === undefined ? [] : [{ issuer: undefined, kind, value }]
}

/**
 * The targets a SET's subject names: `sub_id` (SSF 1.0 §4.1; RFC 9493 §4), or, from transmitters
 * of the drafts before it, the event's own `subject` member.
 *
 * @throws MalformedSubject when there is no subject, or it is not one.
 */
export function targetsOf(subject: unknown, claims: SubjectClaims): SubjectTarget[] {
  if (!isObject(subject)) throw new MalformedSubject()
  if (subject['format'] !== 'complex') return simple(subject, claims, 'user', 0)
  // SSF 1.0 §3.3: a complex subject names a user, a session, a device…: the gate acts on the
  // session when there is one (session-revoked ends that session only) and on the user.
  const found: SubjectTarget[] = []
  for (const member of USER_MEMBERS) {
    if (subject[member] !== undefined) found.push(...simple(subject[member], claims, 'user', 0))
  }
  if (subject['session'] !== undefined) {
    // A session id is the user's issuer's: an opaque one takes the issuer the user names.
    const issuers = new Set(found.map((target) => target.issuer).filter((iss) => iss !== undefined))
    const issuer = issuers.size === 1 ? [...issuers][0] : undefined
    for (const target of simple(subject['session'], claims, 'session', 0)) {
      found.push(target.issuer === undefined ? { ...target, issuer } : target)
    }
  }
  if (subject['user'] === undefined && subject['session'] === undefined) {
    // A device, tenant or application alone: valid, but nothing a bearer token's claims name.
    for (const key of Object.keys(subject))
      if (key !== 'format' && !isObject(subject[key])) throw new MalformedSubject()
  }
  return found
}
