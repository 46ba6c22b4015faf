/**
 * The test issuer's token endpoint: the `client_credentials` grant (RFC 6749 §4.4) for the
 * configured clients, answered with a Keycloak-shaped token response.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http'

import { jsonReply, type Reply } from './http.js'
import type { TestClient } from './options.js'
import { ACCESS_TOKEN_SECONDS } from './realm.js'

const MAX_FORM_BYTES = 64 * 1024
const FORM_FIELDS = ['grant_type', 'client_id', 'client_secret', 'scope'] as const

/** Mints an access token, with the default lifetime, for the realm the request came to. */
export type MintForRealm = (claims: Record<string, unknown>) => Promise<string>

interface Credentials {
  readonly clientId: string
  readonly clientSecret: string
  readonly viaBasic: boolean
}

function oauthError(
  status: number,
  error: string,
  description: string,
  headers: Record<string, string> = {},
): Reply {
  return jsonReply(
    status,
    { error, error_description: description },
    {
      'cache-control': 'no-store',
      ...headers,
    },
  )
}

/** The body as UTF-8, or `undefined` when it is too large or the client went away. */
function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size <= MAX_FORM_BYTES) chunks.push(chunk)
    })
    req.once('end', () =>
      resolve(size > MAX_FORM_BYTES ? undefined : Buffer.concat(chunks).toString()),
    )
    req.once('error', () => resolve(undefined))
    req.once('close', () => resolve(undefined))
  })
}

// RFC 6749 §2.3.1: the client id and secret are form-encoded before they are put in Basic.
function decodeFormComponent(value: string): string | undefined {
  try {
    return decodeURIComponent(value.replaceAll('+', ' '))
  } catch {
    return undefined
  }
}

/** Credentials from HTTP Basic or the form; `null` when both are used (RFC 6749 §2.3). */
function clientCredentials(
  authorization: string | undefined,
  form: URLSearchParams,
): Credentials | undefined | null {
  const formId = form.get('client_id')
  const formSecret = form.get('client_secret')
  const basic = /^basic +([A-Za-z0-9+/=]*) *$/i.exec(authorization ?? '')
  if (authorization !== undefined && basic === null) return undefined
  if (basic) {
    if (formSecret !== null) return null
    const decoded = Buffer.from(basic[1] ?? '', 'base64').toString()
    const colon = decoded.indexOf(':')
    if (colon === -1) return undefined
    const clientId = decodeFormComponent(decoded.slice(0, colon))
    const clientSecret = decodeFormComponent(decoded.slice(colon + 1))
    if (clientId === undefined || clientSecret === undefined) return undefined
    if (formId !== null && formId !== clientId) return null
    return { clientId, clientSecret, viaBasic: true }
  }
  if (formId === null || formSecret === null) return undefined
  return { clientId: formId, clientSecret: formSecret, viaBasic: false }
}

/** Answers a POST to `/realms/{realm}/protocol/openid-connect/token`. */
export async function handleTokenRequest(
  req: IncomingMessage,
  clients: ReadonlyMap<string, TestClient>,
  mint: MintForRealm,
): Promise<Reply> {
  const mediaType = req.headers['content-type']?.split(';', 1)[0]?.trim().toLowerCase()
  if (mediaType !== 'application/x-www-form-urlencoded') {
    return oauthError(400, 'invalid_request', 'form body expected')
  }
  const body = await readBody(req)
  if (body === undefined) return oauthError(413, 'invalid_request', 'form body too large')
  const form = new URLSearchParams(body)
  // RFC 6749 §3.2: parameters must not be included more than once.
  if (FORM_FIELDS.some((field) => form.getAll(field).length > 1)) {
    return oauthError(400, 'invalid_request', 'repeated parameter')
  }
  // Grant type before client, in Keycloak's order.
  const grantType = form.get('grant_type')
  if (grantType === null) return oauthError(400, 'invalid_request', 'missing grant_type')
  if (grantType !== 'client_credentials') {
    return oauthError(400, 'unsupported_grant_type', 'unsupported grant type')
  }

  const credentials = clientCredentials(req.headers.authorization, form)
  if (credentials === null) {
    return oauthError(400, 'invalid_request', 'more than one client authentication method')
  }
  const client = credentials ? clients.get(credentials.clientId) : undefined
  if (!credentials || client?.clientSecret !== credentials.clientSecret) {
    // RFC 6749 §5.2: a client that tried Basic gets a matching challenge.
    const challenge: Record<string, string> = credentials?.viaBasic
      ? { 'www-authenticate': 'Basic realm="token"' }
      : {}
    return oauthError(401, 'invalid_client', 'invalid client credentials', challenge)
  }

  const scope = client.scope ?? 'profile email'
  const serviceAccount = `service-account-${client.clientId}`
  const claims: Record<string, unknown> = {
    sub: serviceAccount,
    azp: client.clientId,
    client_id: client.clientId,
    preferred_username: serviceAccount,
    scope,
    tenant: client.tenant,
  }
  if (client.audience !== undefined) claims['aud'] = client.audience
  const accessToken = await mint(claims)
  // Keycloak issues no refresh token to a client_credentials grant (RFC 6749 §4.4.3).
  return jsonReply(
    200,
    {
      access_token: accessToken,
      expires_in: ACCESS_TOKEN_SECONDS,
      refresh_expires_in: 0,
      token_type: 'Bearer',
      'not-before-policy': 0,
      scope,
    },
    { 'cache-control': 'no-store', pragma: 'no-cache' },
  )
}
