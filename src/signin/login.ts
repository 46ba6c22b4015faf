/**
 * The login route: starts an Authorization Code sign-in with PKCE, state and nonce, and
 * redirects the browser to the provider with the sign-in sealed in the transaction cookie.
 *
 * @module
 */
import * as oidc from 'openid-client'

import { methodNotAllowed, respond, type SignInDeps } from './deps.js'
import type { SignInRequest, SignInResponse } from './internals.js'
import { safeReturnTo } from './return-to.js'
import { readStepUp } from './step-up.js'
import {
  MAX_TRANSACTIONS,
  readTransactions,
  sealTransactions,
  TRANSACTION_SECONDS,
  type Transaction,
} from './transactions.js'

/** Answers the login route (`GET ?returnTo=/path`, and `&acrValues=…&maxAge=…` for a step-up). */
export async function login(
  deps: SignInDeps,
  request: SignInRequest,
  url: URL,
): Promise<SignInResponse> {
  const { settings, provider, cookies } = deps
  if (request.method !== 'GET' && request.method !== 'HEAD') return methodNotAllowed(deps, 'GET')
  const returnTo = safeReturnTo(url.searchParams.get('returnTo')) ?? '/'
  const stepUp = readStepUp(url)
  const keys = await deps.keyRing()
  const state = oidc.randomState()
  const nonce = oidc.randomNonce()
  const codeVerifier = oidc.randomPKCECodeVerifier()
  const parameters = new URLSearchParams({
    redirect_uri: settings.redirectUri,
    response_type: 'code',
    scope: settings.authorizationScope,
    state,
    nonce,
    code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
  })
  // Every product's resource, so that the one refresh token can later be exchanged for each.
  const resources = new Set<string>()
  for (const product of settings.products.values()) {
    for (const resource of product.resource) resources.add(resource)
  }
  for (const resource of resources) parameters.append('resource', resource)
  if (stepUp.acrValues !== undefined) parameters.set('acr_values', stepUp.acrValues)
  if (stepUp.maxAge !== undefined) parameters.set('max_age', String(stepUp.maxAge))
  const target = await provider.authorizationUrl(parameters)
  const transaction: Transaction = {
    s: state,
    n: nonce,
    v: codeVerifier,
    r: returnTo,
    e: settings.now() + TRANSACTION_SECONDS * 1000,
    ...(stepUp.acrValues === undefined ? {} : { a: stepUp.acrValues }),
    ...(stepUp.maxAge === undefined ? {} : { m: stepUp.maxAge }),
  }
  // Several at once, so that sign-ins started in two tabs both complete.
  const pending = readTransactions(
    keys,
    request,
    settings.transactionCookieName,
    settings.now,
  ).slice(-(MAX_TRANSACTIONS - 1))
  return respond(302, {
    Location: target.href,
    'Set-Cookie': [
      cookies.transaction(sealTransactions(keys, [...pending, transaction]), TRANSACTION_SECONDS),
    ],
  })
}
