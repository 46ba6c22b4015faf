/**
 * A resource server's step-up challenge (RFC 9470 §3), as a client reads it: a 401 whose
 * `WWW-Authenticate` says `error="insufficient_user_authentication"`, with the `acr_values` and
 * `max_age` to sign the user in again with. A new token from the same grant cannot help (it keeps
 * the sign-in it came from), so the challenge is surfaced as a typed error, not retried.
 *
 * @module
 */

/** Why a step-up is required, from the challenge's parameters. */
export type StepUpReason = 'acr' | 'max_age' | 'acr_and_max_age' | 'unspecified'

/**
 * The resource server asks for a stronger or a more recent sign-in (RFC 9470): sign the user in
 * again with {@link acrValues} / {@link maxAge} (in `tollgate/signin`:
 * `req.signin.stepUpPath({ acrValues, maxAge, returnTo })`), then retry.
 */
export class StepUpRequiredError extends Error {
  /** Stable machine code. */
  readonly code = 'ERR_STEP_UP_REQUIRED' as const
  /** Which parameters the challenge named. */
  readonly reason: StepUpReason
  /** The status of the answer (401). */
  readonly status: number
  /** `acr_values` of the challenge, in the server's order; `undefined` when it named none. */
  readonly acrValues: readonly string[] | undefined
  /** `max_age` of the challenge, seconds; `undefined` when it named none. */
  readonly maxAge: number | undefined
  /** The `resource_metadata` URL of the challenge (RFC 9728 §5.1), when it named one. */
  readonly resourceMetadata: string | undefined

  constructor(init: {
    readonly status: number
    readonly acrValues?: readonly string[] | undefined
    readonly maxAge?: number | undefined
    readonly resourceMetadata?: string | undefined
  }) {
    const { acrValues, maxAge } = init
    const reason: StepUpReason =
      acrValues !== undefined
        ? maxAge !== undefined
          ? 'acr_and_max_age'
          : 'acr'
        : maxAge !== undefined
          ? 'max_age'
          : 'unspecified'
    super(
      `the resource server requires the user to sign in again${
        acrValues === undefined ? '' : ` with acr_values "${acrValues.join(' ')}"`
      }${maxAge === undefined ? '' : `${acrValues === undefined ? ' within' : ', within'} ${maxAge} s`}: redirect to the sign-in with them, then retry`,
    )
    this.name = 'StepUpRequiredError'
    this.reason = reason
    this.status = init.status
    this.acrValues = acrValues === undefined ? undefined : Object.freeze([...acrValues])
    this.maxAge = maxAge
    this.resourceMetadata = init.resourceMetadata
  }
}

/** `true` for a {@link StepUpRequiredError}, also one from another copy of the package. */
export function isStepUpRequired(value: unknown): value is StepUpRequiredError {
  return (
    value instanceof StepUpRequiredError ||
    (value instanceof Error && (value as { code?: unknown }).code === 'ERR_STEP_UP_REQUIRED')
  )
}

/** One challenge of a `WWW-Authenticate` field: its scheme (lower case) and parameters. */
interface Challenge {
  readonly scheme: string
  readonly parameters: Map<string, string>
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+/
const WHITESPACE = /^[ \t]*/

/**
 * The challenges of a `WWW-Authenticate` field value (RFC 9110 §11.6.1: `scheme auth-param, …,
 * scheme …`), auth-param names in lower case, quoted strings unescaped. A value it cannot read
 * ends the parse: what was read before is kept.
 */
export function parseChallenges(value: string): Challenge[] {
  const challenges: Challenge[] = []
  let rest = value
  const skip = (pattern: RegExp) => {
    const match = pattern.exec(rest)
    if (match !== null) rest = rest.slice(match[0].length)
    return match?.[0]
  }
  let current: Challenge | undefined
  while (rest.length > 0) {
    skip(WHITESPACE)
    if (rest.startsWith(',')) {
      rest = rest.slice(1)
      continue
    }
    const word = skip(TOKEN)
    if (word === undefined) break
    skip(WHITESPACE)
    if (rest.startsWith('=') && current !== undefined && !/^=+\s*(?:,|$)/.test(rest)) {
      // auth-param: name = token / quoted-string
      rest = rest.slice(1)
      skip(WHITESPACE)
      let parameter: string | undefined
      if (rest.startsWith('"')) {
        let index = 1
        let text = ''
        while (index < rest.length && rest[index] !== '"') {
          if (rest[index] === '\\' && index + 1 < rest.length) index++
          text += rest[index]
          index++
        }
        if (index >= rest.length) break
        parameter = text
        rest = rest.slice(index + 1)
      } else {
        parameter = skip(TOKEN)
        if (parameter === undefined) break
      }
      const name = word.toLowerCase()
      if (!current.parameters.has(name)) current.parameters.set(name, parameter)
      continue
    }
    // A new challenge (a token68 after it is skipped).
    current = { scheme: word.toLowerCase(), parameters: new Map() }
    challenges.push(current)
    skip(WHITESPACE)
    skip(/^[A-Za-z0-9\-._~+/]+=*(?=\s*(?:,|$))/)
  }
  return challenges
}

const MAX_AGE = /^\d{1,10}$/

/**
 * The step-up challenge of a response: a {@link StepUpRequiredError} when it is a 401 whose
 * `Bearer` or `DPoP` challenge says `error="insufficient_user_authentication"` (RFC 9470 §3);
 * `undefined` for any other response.
 */
export function stepUpChallengeOf(response: Response): StepUpRequiredError | undefined {
  if (response.status !== 401) return undefined
  const header = response.headers.get('www-authenticate')
  if (header === null || !header.includes('insufficient_user_authentication')) return undefined
  const challenge = parseChallenges(header).find(
    ({ scheme, parameters }) =>
      (scheme === 'bearer' || scheme === 'dpop') &&
      parameters.get('error') === 'insufficient_user_authentication',
  )
  if (challenge === undefined) return undefined
  const acr = challenge.parameters.get('acr_values')?.split(' ').filter(Boolean)
  const maxAge = challenge.parameters.get('max_age')
  return new StepUpRequiredError({
    status: response.status,
    acrValues: acr === undefined || acr.length === 0 ? undefined : acr,
    maxAge: maxAge !== undefined && MAX_AGE.test(maxAge) ? Number(maxAge) : undefined,
    resourceMetadata: challenge.parameters.get('resource_metadata'),
  })
}
