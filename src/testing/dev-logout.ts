/**
 * Back-channel logout sent by the development provider on a test's request (OpenID Connect
 * Back-Channel Logout 1.0 §2.4): a logout token signed with the provider's current key, POSTed
 * to the client's `backchannelLogoutUri`.
 *
 * @module
 */
import { randomUUID } from 'node:crypto'

import type { NormalizedDevClient } from './dev-options.js'
import { signCompactJWS, type TestKey } from './keys.js'

const LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout'
const LOGOUT_TOKEN_SECONDS = 120

/** POSTs a logout token naming `sub` and/or `sid` to `client`; the status the client answered. */
export async function sendLogoutToken(
  issuer: string,
  key: TestKey,
  client: NormalizedDevClient & { readonly backchannelLogoutUri: string },
  logout: { readonly sub?: string | undefined; readonly sid?: string | undefined },
): Promise<number> {
  const now = Math.floor(Date.now() / 1000)
  const token = await signCompactJWS(
    key,
    { alg: key.alg, typ: 'logout+jwt', kid: key.kid },
    {
      iss: issuer,
      aud: client.clientId,
      iat: now,
      exp: now + LOGOUT_TOKEN_SECONDS,
      jti: randomUUID(),
      events: { [LOGOUT_EVENT]: {} },
      ...(logout.sub === undefined ? {} : { sub: logout.sub }),
      ...(logout.sid === undefined ? {} : { sid: logout.sid }),
    },
  )
  const response = await fetch(client.backchannelLogoutUri, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ logout_token: token }).toString(),
  })
  await response.body?.cancel()
  return response.status
}
