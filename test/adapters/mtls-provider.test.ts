/**
 * Certificate-bound tokens from a real provider: oidc-provider's `features.mTLS` binds a
 * client_credentials token to the certificate in the token request's `Client-Cert` field (as a
 * provider behind a TLS-terminating proxy does), computing `cnf["x5t#S256"]` its own way; every
 * adapter then admits that token over TLS with that certificate only.
 */
import type { Server } from 'node:http'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { createTokenSource } from '../../src/client/index.js'
import type { GateEvent } from '../../src/events.js'
import { keycloak } from '../../src/token/issuers.js'
import { MTLS_APPS } from '../helpers/mtls-apps.js'
import { type RunningProvider, startProvider } from '../helpers/oidc-provider.js'
import {
  clientCertField,
  close,
  httpsServerOf,
  listen,
  makeCertificate,
  send,
  type TestCertificate,
} from '../helpers/tls.js'

const ROUTE = '/api/v1/billing/subscriptions'
const SECRET = 'bound-client-secret-of-thirty-two-chars'

let provider: RunningProvider
let serverCert: TestCertificate
let alice: TestCertificate
let mallory: TestCertificate
let token: string

beforeAll(async () => {
  serverCert = makeCertificate('api.test', '127.0.0.1')
  alice = makeCertificate('alice-job')
  mallory = makeCertificate('mallory')
  provider = await startProvider({
    mtls: true,
    clients: [
      {
        client_id: 'bound-job',
        client_secret: SECRET,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        tls_client_certificate_bound_access_tokens: true,
      },
    ],
  })
  // The job's token request carries its certificate as the proxy in front of the provider would.
  const source = createTokenSource({
    issuer: keycloak({ authUrl: provider.url, realm: 'acme' }),
    clientId: 'bound-job',
    clientSecret: SECRET,
    resource: 'urn:platform:gateway',
    fetch: (url, init) => {
      const headers = new Headers(init?.headers)
      headers.set('client-cert', clientCertField(alice))
      return fetch(url, { ...init, headers })
    },
  })
  token = await source.get()
  await source.close?.()
})
afterAll(async () => {
  await provider.close()
})

describe('a token oidc-provider bound to a certificate', () => {
  it('carries cnf x5t#S256, the SHA-256 of the certificate it was requested with', () => {
    const claims = JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString())
    const fromHex = Buffer.from(alice.x509.fingerprint256.replaceAll(':', ''), 'hex')
    expect(claims.cnf).toEqual({ 'x5t#S256': fromHex.toString('base64url') })
  })
})

describe.each(MTLS_APPS)('%s admits the provider-bound token', (_name, createApp) => {
  const events: GateEvent[] = []
  let server: Server
  let port: number
  beforeAll(async () => {
    const plain = createApp({
      issuers: keycloak({ authUrl: provider.url, realms: ['acme'] }),
      audience: 'gateway',
      mtls: { mode: 'required' },
      onEvent: (event) => void events.push(event),
    })
    server = httpsServerOf(plain, serverCert)
    port = await listen(server)
  })
  afterAll(async () => {
    await close(server)
  })
  const over = (client?: TestCertificate) =>
    send({
      port,
      path: ROUTE,
      headers: { authorization: `Bearer ${token}` },
      ca: serverCert,
      client,
    })

  it('with the certificate it was issued for, and not with another or none', async () => {
    expect((await over(alice)).status).toBe(200)
    expect((await over(mallory)).status).toBe(401)
    expect((await over()).status).toBe(401)
    const reasons = events.flatMap((event) => (event.type === 'rejected' ? [event.reason] : []))
    expect(reasons).toEqual(['certificate_mismatch', 'certificate_missing'])
  })
})
