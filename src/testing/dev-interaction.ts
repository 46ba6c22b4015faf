/**
 * The development provider's interactions (oidc-provider hands the login and consent prompts to
 * the application): the user is chosen by the page, by `autoLogin` or by a `login_hint` naming a
 * configured user, then signed in (with the `acr` the request asked for, among `acrValues`) and
 * consenting to everything the client may ask for.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'

import type { NormalizedDevProviderOptions } from './dev-options.js'
import { signInPage } from './dev-pages.js'
import type { ProviderInstance } from './oidc-provider-api.js'

async function formBody(req: IncomingMessage): Promise<URLSearchParams> {
  let body = ''
  for await (const chunk of req) {
    body += String(chunk)
    if (body.length > 4096) break
  }
  return new URLSearchParams(body)
}

async function finishInteraction(
  current: ProviderInstance,
  settings: NormalizedDevProviderOptions,
  req: IncomingMessage,
  res: ServerResponse,
  sub: string,
): Promise<void> {
  const details = await current.interactionDetails(req, res)
  const clientId = String(details.params['client_id'])
  const grant = new current.Grant({ accountId: sub, clientId })
  grant.addOIDCScope(String(details.params['scope'] ?? 'openid'))
  // The user consents to everything the client may ask for; what a token carries is still what
  // the request asked for, among that.
  const client = settings.clients.get(clientId)
  for (const indicator of client?.audiences ?? []) {
    const known = settings.resources.get(indicator)?.scopes ?? []
    grant.addResourceScope(
      indicator,
      known.filter((scope) => client?.scopes.includes(scope)).join(' '),
    )
  }
  const grantId = await grant.save()
  const acr = acrOf(settings, details.params['acr_values'])
  await current.interactionFinished(
    req,
    res,
    { login: { accountId: sub, ...(acr === undefined ? {} : { acr }) }, consent: { grantId } },
    { mergeWithLastSubmission: false },
  )
}

/**
 * The `acr` a sign-in completes with: the first of the request's `acr_values` the provider
 * supports (the user is taken to have completed that method), else its first (weakest) one.
 */
function acrOf(settings: NormalizedDevProviderOptions, requested: unknown): string | undefined {
  return requestedAcr(settings, requested) ?? settings.acrValues[0]
}

/** The first of the request's `acr_values` the provider supports, if any. */
function requestedAcr(
  settings: NormalizedDevProviderOptions,
  requested: unknown,
): string | undefined {
  const asked = typeof requested === 'string' ? requested.split(' ') : []
  return asked.find((value) => settings.acrValues.includes(value))
}

/** Answers a request to `/realms/{realm}/interaction/{uid}`: the page, or the user signed in. */
export async function answerInteraction(
  current: ProviderInstance,
  settings: NormalizedDevProviderOptions,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const details = await current.interactionDetails(req, res)
  const hint = details.params['login_hint']
  const chosen =
    req.method === 'POST'
      ? (await formBody(req)).get('user')
      : (settings.autoLogin ??
        (typeof hint === 'string' && settings.users.has(hint) ? hint : undefined))
  if (chosen !== null && chosen !== undefined && settings.users.has(chosen)) {
    return finishInteraction(current, settings, req, res, chosen)
  }
  const action = (req.url ?? '').split('?', 1)[0] ?? ''
  const page = signInPage(
    settings.realm,
    action,
    String(details.params['client_id']),
    settings.users.values(),
    requestedAcr(settings, details.params['acr_values']),
  )
  res.writeHead(req.method === 'POST' ? 400 : 200, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
  })
  res.end(page)
}
