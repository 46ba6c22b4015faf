/**
 * Token exchange at the development provider: RFC 8693's grant, and Entra ID's on-behalf-of shape
 * of it (the `jwt-bearer` grant with `requested_token_use=on_behalf_of`), registered with
 * oidc-provider as extension grants. Each client's `exchange` policy says whose tokens it may
 * exchange (`from`) and for which products (`to`); the token it gets names the user (`sub`) and
 * the client acting (`act`, nested when the subject token already had one). Refusals are RFC
 * 8693's: `unauthorized_client`, `invalid_target`, `invalid_scope`, `invalid_grant` (a subject
 * token expired, of another issuer, for another audience, or whose `may_act` names someone else),
 * and `invalid_request` (RFC 8693 §2.2.2) for a subject token that is not an access token or is
 * sender-constrained (`cnf`), as the gate's `auth.tokenFor()` refuses them before any request.
 *
 * @module
 */
import { randomUUID } from 'node:crypto'

import { createLocalJWKSet, type JWTPayload, type JWTVerifyResult, jwtVerify } from 'jose'

import type { NormalizedDevProviderOptions, NormalizedDevResource } from './dev-options.js'
import type { DevStatusList } from './dev-status.js'
import { signCompactJWS, type TestKey } from './keys.js'
import type { GrantContext, ProviderInstance } from './oidc-provider-api.js'

export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange'
export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer'
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token'
const JWT_TYPE = 'urn:ietf:params:oauth:token-type:jwt'
// RFC 9068 §2.1: the header `typ` of a JWT access token; this provider marks every one it issues.
const ACCESS_TOKEN_MEDIA_TYPES = new Set(['at+jwt', 'application/at+jwt'])

/** An OAuth error as oidc-provider renders it (`expose`: its own message is the `error`). */
function refusal(error: string, description: string): Error {
  return Object.assign(new Error(error), {
    error,
    error_description: description,
    expose: true,
    status: 400,
    statusCode: 400,
  })
}

function audiencesOf(payload: JWTPayload): readonly string[] {
  const { aud } = payload
  return typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : []
}

function stringParam(params: Record<string, unknown>, name: string): string | undefined {
  const value = params[name]
  return typeof value === 'string' && value !== '' ? value : undefined
}

/** Signs an access token as the provider's own: header `typ: at+jwt`, a fresh `jti`, its `iss`. */
export function mintAccessToken(
  issuer: string,
  key: TestKey,
  claims: Readonly<Record<string, unknown>>,
): Promise<string> {
  return signCompactJWS(
    key,
    { alg: key.alg, kid: key.kid, typ: 'at+jwt' },
    { ...claims, jti: randomUUID(), iss: issuer },
  )
}

/**
 * Registers the exchange grants on `provider`. `keys()` are the provider's signing keys, the
 * current one first (they change when keys rotate).
 */
export function registerExchangeGrants(
  provider: ProviderInstance,
  issuer: string,
  settings: NormalizedDevProviderOptions,
  keys: () => readonly TestKey[],
  statusList?: DevStatusList,
): void {
  async function verified(token: string, what: string): Promise<JWTVerifyResult> {
    const jwks = createLocalJWKSet({ keys: keys().map((key) => ({ ...key.publicJwk })) })
    try {
      return await jwtVerify(token, jwks, { issuer })
    } catch {
      throw refusal('invalid_grant', `${what} is expired, malformed or not issued by this provider`)
    }
  }

  /**
   * The subject token must be one of this provider's access tokens, and a bearer one. An ID or
   * logout token is signed with the same keys, but exchanging it would turn a sign-in's proof of
   * identity into an access token. A sender-constrained token (RFC 9449 `cnf.jkt`, RFC 8705
   * `cnf.x5t#S256`) is bound to a key the exchanging client does not hold: a bearer token for it
   * would undo the binding. RFC 8693 §2.2.2 names the error: `invalid_request`.
   */
  function refuseUnexchangeable({ payload, protectedHeader }: JWTVerifyResult): void {
    const type = protectedHeader.typ?.toLowerCase()
    if (type === undefined || !ACCESS_TOKEN_MEDIA_TYPES.has(type)) {
      throw refusal(
        'invalid_request',
        'the subject token is not an access token (its header typ is not at+jwt)',
      )
    }
    if (payload['cnf'] !== undefined) {
      throw refusal(
        'invalid_request',
        "the subject token is sender-constrained (cnf): it is bound to its client's key and is not exchanged for a bearer token",
      )
    }
  }

  function policyOf(clientId: string) {
    const policy = settings.clients.get(clientId)?.exchange
    if (policy === undefined) {
      throw refusal('unauthorized_client', `client "${clientId}" may not exchange tokens`)
    }
    return policy
  }

  /** The target resource: named by `resource` (the `audience` parameter arrives as one). */
  function targetOf(
    indicators: readonly string[],
    allowed: readonly string[],
  ): [string, NormalizedDevResource] {
    if (indicators.length !== 1) {
      throw refusal('invalid_target', 'name exactly one product: a resource or an audience')
    }
    const indicator = indicators[0] as string
    const resource = settings.resources.get(indicator)
    if (resource === undefined || !allowed.includes(indicator)) {
      throw refusal('invalid_target', 'this client may not exchange tokens for that product')
    }
    return [indicator, resource]
  }

  function scopeFor(
    requested: readonly string[],
    resource: NormalizedDevResource,
    clientId: string,
  ): string {
    const granted = settings.clients.get(clientId)?.scopes ?? []
    const offered = resource.scopes.filter((scope) => granted.includes(scope))
    if (requested.length === 0) return offered.join(' ')
    const refused = requested.filter((scope) => !offered.includes(scope))
    if (refused.length > 0) {
      throw refusal('invalid_scope', `scope not available for that product: ${refused.join(' ')}`)
    }
    return requested.join(' ')
  }

  async function issue(
    ctx: GrantContext,
    subjectToken: string,
    indicators: readonly string[],
    requested: readonly string[],
    actorToken: string | undefined,
    onBehalfOf: boolean,
  ): Promise<void> {
    const { clientId } = ctx.oidc.client
    const policy = policyOf(clientId)
    const checked = await verified(subjectToken, 'the subject token')
    refuseUnexchangeable(checked)
    const subject = checked.payload
    const from = policy.from.map((indicator) => settings.resources.get(indicator)?.audience)
    if (!audiencesOf(subject).some((audience) => from.includes(audience))) {
      throw refusal(
        'invalid_grant',
        'the subject token is not for a product whose tokens this client may exchange',
      )
    }
    let actor = policy.actor ?? clientId
    if (actorToken !== undefined) {
      const { payload: acting } = await verified(actorToken, 'the actor token')
      actor = typeof acting.sub === 'string' ? acting.sub : actor
    }
    const mayAct = subject['may_act'] as { sub?: unknown } | undefined
    if (mayAct !== undefined && mayAct?.sub !== actor) {
      throw refusal(
        'invalid_grant',
        'the subject token does not allow this client to act for it (may_act)',
      )
    }
    const [, resource] = targetOf(indicators, policy.to)
    const scope = scopeFor(requested, resource, clientId)
    const now = Math.floor(Date.now() / 1000)
    const exp = Math.min(
      now + settings.accessTokenTtlSeconds,
      subject.exp ?? Number.MAX_SAFE_INTEGER,
    )
    const previous = subject['act']
    const user = typeof subject.sub === 'string' ? settings.users.get(subject.sub) : undefined
    const accessToken = await mintAccessToken(issuer, keys()[0] as TestKey, {
      ...user?.tokenClaims,
      sub: subject.sub,
      iat: now,
      exp,
      ...(scope === '' ? {} : { scope }),
      client_id: clientId,
      aud: resource.audience,
      act: previous === undefined ? { sub: actor } : { sub: actor, act: previous },
      ...statusList?.claim(),
    })
    ctx.body = {
      access_token: accessToken,
      ...(onBehalfOf ? {} : { issued_token_type: ACCESS_TOKEN_TYPE }),
      token_type: 'Bearer',
      expires_in: exp - now,
      ...(scope === '' ? {} : { scope }),
    }
  }

  provider.registerGrantType(
    TOKEN_EXCHANGE_GRANT,
    async (ctx: GrantContext) => {
      const { params } = ctx.oidc
      const subjectToken = stringParam(params, 'subject_token')
      const subjectType = stringParam(params, 'subject_token_type')
      if (subjectToken === undefined || subjectType === undefined) {
        throw refusal('invalid_request', 'subject_token and subject_token_type are required')
      }
      if (subjectType !== ACCESS_TOKEN_TYPE && subjectType !== JWT_TYPE) {
        throw refusal('invalid_request', 'unsupported subject_token_type')
      }
      const requestedType = stringParam(params, 'requested_token_type')
      if (requestedType !== undefined && requestedType !== ACCESS_TOKEN_TYPE) {
        throw refusal('invalid_request', 'only access tokens are issued by exchange')
      }
      const listOf = (value: unknown): string[] =>
        typeof value === 'string' ? [value] : Array.isArray(value) ? (value as string[]) : []
      // RFC 8693 §2.1: the product by `resource`, or by `audience` (its logical name: here, the
      // `aud` of one of the resources).
      let indicators = listOf(params['resource'])
      if (indicators.length === 0) {
        indicators = listOf(params['audience']).map(
          (audience) =>
            [...settings.resources].find(([, resource]) => resource.audience === audience)?.[0] ??
            audience,
        )
      }
      const scope = stringParam(params, 'scope')
      await issue(
        ctx,
        subjectToken,
        indicators,
        scope === undefined ? [] : scope.split(' ').filter(Boolean),
        stringParam(params, 'actor_token'),
        false,
      )
    },
    [
      'subject_token',
      'subject_token_type',
      'actor_token',
      'actor_token_type',
      'requested_token_type',
      'resource',
      'audience',
      'scope',
    ],
    ['resource', 'audience'],
  )

  provider.registerGrantType(
    JWT_BEARER_GRANT,
    async (ctx: GrantContext) => {
      const { params } = ctx.oidc
      const assertion = stringParam(params, 'assertion')
      if (
        assertion === undefined ||
        stringParam(params, 'requested_token_use') !== 'on_behalf_of'
      ) {
        throw refusal(
          'invalid_request',
          'assertion and requested_token_use=on_behalf_of are required',
        )
      }
      // Entra's shape: `{resource}/.default`, or the product's own scopes.
      const scopes = (stringParam(params, 'scope') ?? '').split(' ').filter(Boolean)
      const all = scopes.find((scope) => scope.endsWith('/.default'))
      let indicator: string | undefined
      if (all !== undefined) {
        const named = all.slice(0, -'/.default'.length)
        indicator = [...settings.resources].find(
          ([key, resource]) => key === named || resource.audience === named,
        )?.[0]
      } else {
        indicator = [...settings.resources].find(
          ([, resource]) =>
            scopes.length > 0 && scopes.every((scope) => resource.scopes.includes(scope)),
        )?.[0]
      }
      await issue(
        ctx,
        assertion,
        indicator === undefined ? [all ?? ''] : [indicator],
        all === undefined ? scopes : [],
        undefined,
        true,
      )
    },
    ['assertion', 'requested_token_use', 'scope'],
  )
}
