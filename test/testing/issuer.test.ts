import { createPublicKey, verify } from 'node:crypto'
import { connect } from 'node:net'

import {
  createRemoteJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  type JWK,
  errors as joseErrors,
  jwtVerify,
} from 'jose'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'

import {
  createTestIssuer,
  TEST_ALGORITHMS,
  type TestIssuer,
  type TestIssuerFault,
  type TestIssuerOptions,
} from '../../src/testing/index.js'

const TIMEOUT_MS = 2_000

function get(url: string, init: RequestInit = {}): Promise<Response> {
  return fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS), ...init })
}

async function verifyWith(issuer: TestIssuer, token: string, realm?: string) {
  return jwtVerify(token, createRemoteJWKSet(new URL(issuer.jwksUri(realm))), {
    issuer: issuer.issuer(realm),
    audience: 'api',
  })
}

function tokenRequest(
  issuer: TestIssuer,
  form: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return get(`${issuer.issuer()}/protocol/openid-connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  })
}

/** Sends raw bytes over TCP and resolves with whatever comes back before the socket closes. */
function rawExchange(port: number, ...parts: (string | Buffer)[]): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    let received = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => {
      received += chunk
    })
    socket.on('error', () => undefined)
    socket.on('close', () => resolve(received))
    socket.setTimeout(150, () => socket.destroy())
    for (const part of parts) socket.write(part)
  })
}

describe('createTestIssuer', () => {
  let all: TestIssuer
  let issuer: TestIssuer

  beforeAll(async () => {
    ;[all, issuer] = await Promise.all([
      createTestIssuer({ algorithms: [...TEST_ALGORITHMS] }),
      createTestIssuer({
        realms: ['test', 'other'],
        algorithms: ['ES256', 'EdDSA'],
        clients: [
          { clientId: 'billing', clientSecret: 's3cret', audience: 'gateway', tenant: 'acme' },
          { clientId: 'reports', clientSecret: 'p:w+d/é', scope: 'reports:read' },
        ],
      }),
    ])
  })

  afterAll(async () => {
    await Promise.all([all.close(), issuer.close()])
  })

  afterEach(() => {
    vi.useRealTimers()
    issuer.setFault(undefined)
    issuer.overrideJwks(undefined)
    issuer.resetCounts()
  })

  describe('minted tokens', () => {
    it.each([
      [
        'audience',
        { audience: 'office' },
        /"audience" is an option name, not a JWT claim; use the claim "aud"/,
      ],
      ['issuer', { issuer: 'x' }, /use the claim "iss"/],
      ['subject', { subject: 'u' }, /use the claim "sub"/],
      ['expiresIn', { expiresIn: 60 }, /use the option expiresInSeconds/],
      ['notBefore', { notBefore: 1 }, /use the claim "nbf"/],
      ['jwtid', { jwtid: 'x' }, /use the claim "jti"/],
    ])('refuses the option name %s passed as a claim', async (_name, claims, message) => {
      await expect(all.mint(claims)).rejects.toThrow(message)
    })

    it.each([
      [
        'expiresIn',
        { expiresIn: 60 },
        /"expiresIn" is not an option of mint\(\); use the option expiresInSeconds/,
      ],
      [
        'a misspelt expiresInSecond',
        { expiresInSecond: 60 },
        /"expiresInSecond" is not an option of mint\(\); its options are realm, alg, kid, header, expiresInSeconds/,
      ],
      [
        'audience',
        { audience: 'x' },
        /"audience" is not an option of mint\(\); use the claim "aud"/,
      ],
      ['constructor', { constructor: 1 }, /"constructor" is not an option/],
    ])('refuses the unknown option %s', async (_name, options, message) => {
      await expect(all.mint({}, options as never)).rejects.toThrow(message)
    })

    it('still mints custom claims that are not option names', async () => {
      const token = await all.mint({ tenant: 'acme', org: { id: 'o1' } })
      const { payload } = await verifyWith(all, token)
      expect(payload).toMatchObject({ tenant: 'acme', org: { id: 'o1' } })
    })

    it.each(TEST_ALGORITHMS)(
      'verify with jose against the served JWKS when signed with %s',
      async (alg) => {
        const token = await all.mint({}, { alg })
        const { protectedHeader } = await verifyWith(all, token)
        expect(protectedHeader.alg).toBe(alg)
      },
    )

    it('carry Keycloak-shaped default claims and header', async () => {
      const before = Math.floor(Date.now() / 1000)
      const token = await issuer.mint()
      const claims = decodeJwt(token)
      expect(claims).toMatchObject({
        iss: issuer.issuer(),
        aud: 'api',
        sub: 'user-1',
        azp: 'test-client',
        typ: 'Bearer',
        scope: 'openid profile email',
      })
      expect(claims.iat).toBeGreaterThanOrEqual(before)
      expect(claims.exp).toBe((claims.iat as number) + 300)
      expect(claims.jti).toEqual(expect.any(String))
      expect(decodeProtectedHeader(token)).toEqual({
        alg: 'ES256',
        typ: 'JWT',
        kid: issuer.jwks().keys[0]?.['kid'],
      })
    })

    it('let given claims override the defaults and drop claims set to undefined', async () => {
      const token = await issuer.mint(
        { sub: 'alice', aud: ['a', 'b'], tenant: 'acme', jti: undefined, azp: undefined },
        { expiresInSeconds: 60 },
      )
      const claims = decodeJwt(token)
      expect(claims).toMatchObject({ sub: 'alice', aud: ['a', 'b'], tenant: 'acme' })
      expect(claims).not.toHaveProperty('jti')
      expect(claims).not.toHaveProperty('azp')
      expect(claims.exp).toBe((claims.iat as number) + 60)
    })

    it('take iat and exp from the faked system clock', async () => {
      vi.useFakeTimers()
      vi.setSystemTime(new Date('2030-01-01T00:00:00Z'))
      const claims = decodeJwt(await issuer.mint())
      expect(claims.iat).toBe(Date.UTC(2030, 0, 1) / 1000)
      expect(claims.exp).toBe(Date.UTC(2030, 0, 1) / 1000 + 300)
    })

    it('merge header options and drop header parameters set to undefined', async () => {
      const token = await issuer.mint({}, { header: { typ: 'at+jwt', kid: undefined, x: 1 } })
      expect(decodeProtectedHeader(token)).toEqual({ alg: 'ES256', typ: 'at+jwt', x: 1 })
    })

    it('use the named realm for iss and signing key, which the other realm does not publish', async () => {
      const token = await issuer.mint({}, { realm: 'other', alg: 'EdDSA' })
      await expect(verifyWith(issuer, token, 'other')).resolves.toBeDefined()
      expect(decodeJwt(token).iss).toBe(issuer.issuer('other'))
      await expect(
        jwtVerify(token, createRemoteJWKSet(new URL(issuer.jwksUri('test')))),
      ).rejects.toBeInstanceOf(joseErrors.JWKSNoMatchingKey)
    })

    it('sign with an explicit kid from another realm', async () => {
      const [otherKey] = issuer.jwks('other').keys
      const kid = otherKey?.['kid'] as string
      const token = await issuer.mint({}, { kid })
      expect(decodeProtectedHeader(token)).toMatchObject({ alg: 'ES256', kid })
      expect(decodeJwt(token).iss).toBe(issuer.issuer('test'))
    })

    it('are refused for an unknown realm, an unknown kid or an algorithm without a key', async () => {
      await expect(issuer.mint({}, { realm: 'nope' })).rejects.toThrow(/unknown realm/)
      await expect(issuer.mint({}, { kid: 'nope' })).rejects.toThrow(/unknown kid/)
      await expect(issuer.mint({}, { alg: 'RS256' })).rejects.toThrow(/no RS256 key/)
    })
  })

  describe('sign', () => {
    it('signs exactly the header and raw payload given, even without alg', async () => {
      const header = { typ: 'JWT', crit: ['exp'] }
      const token = await issuer.sign(header, '{"sub":"x", "dup":1, "dup":2}')
      const [encodedHeader, encodedPayload, signature] = token.split('.') as [
        string,
        string,
        string,
      ]
      expect(JSON.parse(Buffer.from(encodedHeader, 'base64url').toString())).toEqual(header)
      expect(Buffer.from(encodedPayload, 'base64url').toString()).toBe(
        '{"sub":"x", "dup":1, "dup":2}',
      )
      const jwk = issuer.jwks().keys[0] as JWK
      const valid = verify(
        'sha256',
        Buffer.from(`${encodedHeader}.${encodedPayload}`),
        { key: createPublicKey({ key: jwk, format: 'jwk' }), dsaEncoding: 'ieee-p1363' },
        Buffer.from(signature, 'base64url'),
      )
      expect(valid).toBe(true)
    })

    it('signs with the realm key for header.alg, and with the kid option over it', async () => {
      const jwks = createRemoteJWKSet(new URL(issuer.jwksUri()))
      const edJwk = issuer.jwks().keys.find((key) => key['alg'] === 'EdDSA') as JWK
      const byAlg = await issuer.sign({ alg: 'EdDSA', kid: edJwk.kid }, { sub: 'x' })
      await expect(jwtVerify(byAlg, jwks)).resolves.toMatchObject({ payload: { sub: 'x' } })

      // Header claims ES256, but the EdDSA key of `kid` signs: an algorithm-confusion token.
      const confused = await issuer.sign(
        { alg: 'ES256' },
        { sub: 'x' },
        { kid: edJwk.kid as string },
      )
      const [encodedHeader, encodedPayload, signature] = confused.split('.') as [
        string,
        string,
        string,
      ]
      const edKey = createPublicKey({ key: edJwk, format: 'jwk' })
      const input = Buffer.from(`${encodedHeader}.${encodedPayload}`)
      expect(verify(null, input, edKey, Buffer.from(signature, 'base64url'))).toBe(true)
      await expect(jwtVerify(confused, jwks)).rejects.toThrow()
    })
  })

  describe('keys', () => {
    it('publishes public members only, while privateKey() hands out the private JWK', () => {
      for (const key of all.jwks().keys) {
        expect(key).toMatchObject({ use: 'sig', kid: expect.any(String), alg: expect.any(String) })
        expect(
          Object.keys(key).filter((member) => ['d', 'p', 'q', 'dp', 'dq', 'qi'].includes(member)),
        ).toEqual([])
        const material = all.privateKey(key['kid'] as string)
        expect(material.alg).toBe(key['alg'])
        expect(material.jwk).toHaveProperty('d')
        expect(material.key.type).toBe('private')
      }
      expect(() => all.privateKey('nope')).toThrow(/unknown kid/)
    })

    it('rotates: both keys are published and new tokens use the new key', async () => {
      const rotating = await createTestIssuer({ algorithms: ['ES256'] })
      try {
        const oldKid = rotating.jwks().keys[0]?.['kid']
        const oldToken = await rotating.mint()
        const newKid = await rotating.rotate()
        expect(rotating.jwks().keys.map((key) => key['kid'])).toEqual([oldKid, newKid])
        const newToken = await rotating.mint()
        expect(decodeProtectedHeader(newToken).kid).toBe(newKid)
        await expect(verifyWith(rotating, oldToken)).resolves.toBeDefined()
        await expect(verifyWith(rotating, newToken)).resolves.toBeDefined()

        const newest = await rotating.rotate({ keepPrevious: false })
        expect(rotating.jwks().keys.map((key) => key['kid'])).toEqual([oldKid, newest])
      } finally {
        await rotating.close()
      }
    })

    it('rotates in a key for an algorithm that was not configured', async () => {
      const rotating = await createTestIssuer({ algorithms: ['ES256'] })
      try {
        const kid = await rotating.rotate({ alg: 'ES384' })
        const token = await rotating.mint({}, { alg: 'ES384' })
        expect(decodeProtectedHeader(token)).toMatchObject({ alg: 'ES384', kid })
        await expect(verifyWith(rotating, token)).resolves.toBeDefined()
      } finally {
        await rotating.close()
      }
    })

    it('unpublishes a key, so tokens signed with it no longer verify', async () => {
      const rotating = await createTestIssuer({ algorithms: ['ES256'] })
      try {
        const oldKid = rotating.jwks().keys[0]?.['kid'] as string
        const oldToken = await rotating.mint()
        await rotating.rotate()
        rotating.unpublish(oldKid)
        expect(rotating.jwks().keys.map((key) => key['kid'])).not.toContain(oldKid)
        await expect(verifyWith(rotating, oldToken)).rejects.toBeInstanceOf(
          joseErrors.JWKSNoMatchingKey,
        )
        expect(() => rotating.unpublish('nope')).toThrow(/unknown kid/)
      } finally {
        await rotating.close()
      }
    })

    it('serves an override body, status and content type until it is cleared', async () => {
      issuer.overrideJwks('not json', { status: 203, contentType: 'text/plain' })
      let res = await get(issuer.jwksUri())
      expect(res.status).toBe(203)
      expect(res.headers.get('content-type')).toBe('text/plain')
      expect(await res.text()).toBe('not json')

      issuer.overrideJwks({ keys: [{ kty: 'oct', k: 'c2VjcmV0' }] })
      res = await get(issuer.jwksUri())
      expect(await res.json()).toEqual({ keys: [{ kty: 'oct', k: 'c2VjcmV0' }] })

      issuer.overrideJwks(undefined)
      res = await get(issuer.jwksUri())
      expect(await res.json()).toEqual(issuer.jwks())
    })
  })

  describe('endpoints', () => {
    it('serves the JWKS as JSON with Cache-Control: no-cache', async () => {
      const res = await get(issuer.jwksUri('other'))
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toBe('application/json')
      expect(res.headers.get('cache-control')).toBe('no-cache')
      expect(await res.json()).toEqual(issuer.jwks('other'))
    })

    it('serves a discovery document that points at the realm endpoints', async () => {
      const res = await get(`${issuer.issuer('other')}/.well-known/openid-configuration`)
      const base = `${issuer.url}/realms/other`
      expect(await res.json()).toMatchObject({
        issuer: base,
        jwks_uri: `${base}/protocol/openid-connect/certs`,
        authorization_endpoint: `${base}/protocol/openid-connect/auth`,
        token_endpoint: `${base}/protocol/openid-connect/token`,
        id_token_signing_alg_values_supported: ['ES256', 'EdDSA'],
        grant_types_supported: ['client_credentials'],
      })
    })

    it('counts certs and discovery fetches per realm until reset', async () => {
      await get(issuer.jwksUri())
      await get(issuer.jwksUri())
      await get(issuer.jwksUri('other'))
      await get(`${issuer.issuer()}/.well-known/openid-configuration`)
      expect([issuer.fetchCount(), issuer.fetchCount('other')]).toEqual([2, 1])
      expect([issuer.discoveryCount(), issuer.discoveryCount('other')]).toEqual([1, 0])
      issuer.resetCounts()
      expect([issuer.fetchCount(), issuer.discoveryCount()]).toEqual([0, 0])
    })

    it.each([
      ['an unknown path', '/nope', 404],
      ['an unknown realm', '/realms/nope/protocol/openid-connect/certs', 404],
      ['an unknown realm endpoint', '/realms/test/protocol/openid-connect/userinfo', 404],
    ])('answers 404 to %s', async (_, path, status) => {
      expect((await get(`${issuer.url}${path}`)).status).toBe(status)
    })

    it('answers 405 to a method an endpoint does not serve', async () => {
      const res = await get(issuer.jwksUri(), { method: 'POST' })
      expect(res.status).toBe(405)
      expect(res.headers.get('allow')).toBe('GET, HEAD')
      expect((await get(`${issuer.issuer()}/protocol/openid-connect/token`)).status).toBe(405)
    })
  })

  describe('token endpoint', () => {
    it('issues a client_credentials token with the client audience, tenant and service account', async () => {
      const res = await tokenRequest(issuer, {
        grant_type: 'client_credentials',
        client_id: 'billing',
        client_secret: 's3cret',
      })
      expect(res.status).toBe(200)
      expect(res.headers.get('cache-control')).toBe('no-store')
      const body = (await res.json()) as Record<string, unknown>
      expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 300, scope: 'profile email' })
      const { payload } = await jwtVerify(
        body['access_token'] as string,
        createRemoteJWKSet(new URL(issuer.jwksUri())),
        { issuer: issuer.issuer(), audience: 'gateway' },
      )
      expect(payload).toMatchObject({
        azp: 'billing',
        client_id: 'billing',
        sub: 'service-account-billing',
        preferred_username: 'service-account-billing',
        tenant: 'acme',
        scope: 'profile email',
      })
      expect((payload.exp as number) - (payload.iat as number)).toBe(300)
      // Keycloak issues no refresh token to a client_credentials grant (RFC 6749 §4.4.3).
      expect(body).not.toHaveProperty('refresh_token')
    })

    it('accepts client credentials in HTTP Basic, form-encoded first', async () => {
      const basic = Buffer.from(`reports:${encodeURIComponent('p:w+d/é')}`).toString('base64')
      const res = await tokenRequest(
        issuer,
        { grant_type: 'client_credentials' },
        { authorization: `Basic ${basic}` },
      )
      expect(res.status).toBe(200)
      const body = (await res.json()) as Record<string, unknown>
      const claims = decodeJwt(body['access_token'] as string)
      expect(claims).toMatchObject({ azp: 'reports', aud: 'api', scope: 'reports:read' })
      expect(claims).not.toHaveProperty('tenant')
    })

    it.each([
      ['a wrong secret', { client_id: 'billing', client_secret: 'wrong' }, {}],
      ['an unknown client', { client_id: 'ghost', client_secret: 's3cret' }, {}],
      ['no credentials', {}, {}],
      ['a wrong Basic secret', {}, { authorization: `Basic ${btoa('billing:wrong')}` }],
      ['a non-Basic Authorization', {}, { authorization: 'Bearer abc' }],
    ])('answers 401 invalid_client for %s', async (_, credentials, headers) => {
      const res = await tokenRequest(
        issuer,
        { grant_type: 'client_credentials', ...credentials },
        headers,
      )
      expect(res.status).toBe(401)
      expect(await res.json()).toMatchObject({ error: 'invalid_client' })
      if ('authorization' in headers && headers.authorization.startsWith('Basic')) {
        expect(res.headers.get('www-authenticate')).toMatch(/^Basic /)
      }
    })

    it.each([
      ['password', 'unsupported_grant_type'],
      ['authorization_code', 'unsupported_grant_type'],
    ])('answers 400 %s for grant_type=%s', async (grantType, error) => {
      const res = await tokenRequest(issuer, {
        grant_type: grantType,
        client_id: 'billing',
        client_secret: 's3cret',
      })
      expect(res.status).toBe(400)
      expect(await res.json()).toMatchObject({ error })
    })

    it('answers 400 invalid_request to JSON, a missing grant_type and repeated parameters', async () => {
      const url = `${issuer.issuer()}/protocol/openid-connect/token`
      const json = await get(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"grant_type":"client_credentials"}',
      })
      const missing = await tokenRequest(issuer, { client_id: 'billing', client_secret: 's3cret' })
      const repeated = await get(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=client_credentials&client_id=billing&client_id=x&client_secret=s3cret',
      })
      for (const res of [json, missing, repeated]) {
        expect(res.status).toBe(400)
        expect(await res.json()).toMatchObject({ error: 'invalid_request' })
      }
    })
  })

  describe('faults', () => {
    it.each<[string, TestIssuerFault, (res: Response) => Promise<void>]>([
      [
        'status',
        { kind: 'status', status: 503, body: 'down', headers: { 'retry-after': '7' } },
        async (res) => {
          expect([res.status, res.headers.get('retry-after'), await res.text()]).toEqual([
            503,
            '7',
            'down',
          ])
        },
      ],
      [
        'html',
        { kind: 'html' },
        async (res) => {
          expect(res.status).toBe(200)
          expect(res.headers.get('content-type')).toMatch(/^text\/html/)
          expect(await res.text()).toMatch(/^<!doctype html>/)
        },
      ],
      [
        'invalid-json',
        { kind: 'invalid-json' },
        async (res) => {
          expect(res.headers.get('content-type')).toBe('application/json')
          await expect(res.json()).rejects.toBeInstanceOf(SyntaxError)
        },
      ],
      [
        'redirect',
        { kind: 'redirect', location: 'http://127.0.0.1:9/elsewhere' },
        async (res) => {
          expect([res.status, res.headers.get('location')]).toEqual([
            302,
            'http://127.0.0.1:9/elsewhere',
          ])
        },
      ],
    ])('%s: the certs and discovery endpoints misbehave as told', async (_, fault, check) => {
      issuer.setFault(fault)
      await check(await get(issuer.jwksUri(), { redirect: 'manual' }))
      await check(
        await get(`${issuer.issuer()}/.well-known/openid-configuration`, { redirect: 'manual' }),
      )
      expect(issuer.fetchCount()).toBe(1)
      expect(issuer.discoveryCount()).toBe(1)
      expect((await get(issuer.jwksUri('other'))).status).toBe(200)
    })

    it('empty-keys: serves an empty set and leaves discovery healthy', async () => {
      issuer.setFault({ kind: 'empty-keys' })
      expect(await (await get(issuer.jwksUri())).json()).toEqual({ keys: [] })
      const discovery = await get(`${issuer.issuer()}/.well-known/openid-configuration`)
      expect(await discovery.json()).toMatchObject({ issuer: issuer.issuer() })
    })

    it('slow-headers: holds the response back, then answers normally', async () => {
      issuer.setFault({ kind: 'slow-headers', delayMs: 1_000 })
      await expect(
        fetch(issuer.jwksUri(), { signal: AbortSignal.timeout(100) }),
      ).rejects.toMatchObject({ name: 'TimeoutError' })
      issuer.setFault({ kind: 'slow-headers', delayMs: 50 })
      const started = performance.now()
      expect(await (await get(issuer.jwksUri())).json()).toEqual(issuer.jwks())
      expect(performance.now() - started).toBeGreaterThanOrEqual(40)
    })

    it('slow-body: sends headers and part of the body, then stalls', async () => {
      issuer.setFault({ kind: 'slow-body', delayMs: 1_000 })
      const res = await fetch(issuer.jwksUri(), { signal: AbortSignal.timeout(200) })
      expect(res.status).toBe(200)
      await expect(res.text()).rejects.toMatchObject({ name: 'TimeoutError' })
      issuer.setFault({ kind: 'slow-body', delayMs: 20 })
      expect(await (await get(issuer.jwksUri())).json()).toEqual(issuer.jwks())
    })

    it('huge: streams a valid-looking JSON body of the requested size without Content-Length', async () => {
      const bytes = 3 * 1024 * 1024
      issuer.setFault({ kind: 'huge', bytes })
      const res = await get(issuer.jwksUri())
      expect(res.headers.get('content-length')).toBeNull()
      const body = await res.text()
      expect(body.length).toBe(bytes)
      expect(JSON.parse(body)).toMatchObject({ keys: [] })
    })

    it('hang: never answers, and the issuer still closes promptly', async () => {
      const hanging = await createTestIssuer({ algorithms: ['EdDSA'] })
      hanging.setFault({ kind: 'hang' })
      await expect(
        fetch(hanging.jwksUri(), { signal: AbortSignal.timeout(100) }),
      ).rejects.toMatchObject({ name: 'TimeoutError' })
      const pending = fetch(hanging.jwksUri()).then(
        () => 'answered',
        () => 'dropped',
      )
      await vi.waitUntil(() => hanging.fetchCount() === 2)
      await hanging.close()
      expect(await pending).toBe('dropped')
    })

    it('applies to one endpoint when told, and heals with undefined', async () => {
      issuer.setFault({ kind: 'status', status: 500 }, { endpoint: 'discovery' })
      expect((await get(issuer.jwksUri())).status).toBe(200)
      expect((await get(`${issuer.issuer()}/.well-known/openid-configuration`)).status).toBe(500)
      issuer.setFault(undefined)
      expect((await get(`${issuer.issuer()}/.well-known/openid-configuration`)).status).toBe(200)
    })

    it.each([
      { kind: 'status', status: 42 },
      { kind: 'status', status: 500, headers: { 'bad header': 'x' } },
      { kind: 'slow-body', delayMs: -1 },
      { kind: 'huge', bytes: 1.5 },
      { kind: 'redirect', location: 'http://x/\r\nSet-Cookie: a=b' },
      { kind: 'teapot' },
    ])('refuses a malformed fault %j with a TypeError', (fault) => {
      expect(() => issuer.setFault(fault as TestIssuerFault)).toThrow(TypeError)
    })
  })

  describe('lifecycle', () => {
    it('refuses connections while stopped and serves again on the same port after start', async () => {
      const lifecycle = await createTestIssuer({ algorithms: ['ES256'] })
      try {
        const token = await lifecycle.mint()
        expect((await get(lifecycle.jwksUri())).status).toBe(200)
        await lifecycle.stop()
        await expect(get(lifecycle.jwksUri())).rejects.toMatchObject({
          cause: { code: 'ECONNREFUSED' },
        })
        await lifecycle.start()
        await expect(verifyWith(lifecycle, token)).resolves.toBeDefined()
      } finally {
        await lifecycle.close()
      }
      await expect(lifecycle.start()).rejects.toThrow(/closed/)
    })

    it('listens on the requested port', async () => {
      const first = await createTestIssuer({ algorithms: ['ES256'] })
      const port = Number(new URL(first.url).port)
      await first.close()
      const second = await createTestIssuer({ algorithms: ['ES256'], port })
      expect(second.url).toBe(`http://127.0.0.1:${port}`)
      await second.close()
    })

    it.each<[string, TestIssuerOptions]>([
      ['no realms', { realms: [] }],
      ['a realm with a slash', { realms: ['a/b'] }],
      ['a dot-dot realm', { realms: ['..'] }],
      ['duplicate realms', { realms: ['a', 'a'] }],
      ['an unknown algorithm', { algorithms: ['HS256' as 'RS256'] }],
      ['no algorithms', { algorithms: [] }],
      ['a numeric audience', { audience: 1 as unknown as string }],
      ['a client without id', { clients: [{ clientId: '', clientSecret: 'x' }] }],
      [
        'duplicate clients',
        {
          clients: [
            { clientId: 'a', clientSecret: 'x' },
            { clientId: 'a', clientSecret: 'y' },
          ],
        },
      ],
      ['a negative port', { port: -1 }],
    ])('refuses %s with a TypeError', async (_, options) => {
      await expect(createTestIssuer(options)).rejects.toBeInstanceOf(TypeError)
    })
  })

  describe('robustness', () => {
    const port = () => Number(new URL(issuer.url).port)
    const tokenHead =
      'POST /realms/test/protocol/openid-connect/token HTTP/1.1\r\nHost: x\r\nConnection: close\r\n' +
      'Content-Type: application/x-www-form-urlencoded\r\n'

    it.each<[string, (string | Buffer)[], string]>([
      ['a non-HTTP line', ['GARBAGE\r\n\r\n'], '400'],
      ['random bytes', [Buffer.from([0, 255, 13, 10, 13, 10, 7, 128])], '400'],
      [
        'an invalid Content-Length',
        ['GET / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n'],
        '400',
      ],
      [
        'an oversized header',
        [`GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'x'.repeat(65_536)}\r\n\r\n`],
        '431',
      ],
      [
        'percent garbage in the path',
        ['GET /realms/%%%/../%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'],
        '404',
      ],
      ['an asterisk target', ['OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'], '404'],
      [
        'an absolute-form target',
        [
          'GET http://evil/realms/test/protocol/openid-connect/certs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
        ],
        '404',
      ],
      [
        'a malformed Basic header and a non-UTF-8 form',
        [
          `${tokenHead}Authorization: Basic %%%\r\nContent-Length: 36\r\n\r\ngrant_type=client_credentials&`,
          Buffer.from([0xff, 0xfe, 0x25, 0x7a, 0x7a, 0x3d]),
        ],
        '401',
      ],
      [
        'Basic credentials that are not form-encoded',
        [
          `${tokenHead}Authorization: Basic ${btoa('%zz:%')}\r\nContent-Length: 29\r\n\r\n` +
            'grant_type=client_credentials',
        ],
        '401',
      ],
      [
        'an oversized form',
        [`${tokenHead}Content-Length: 70000\r\n\r\n`, 'a'.repeat(70_000)],
        '413',
      ],
      ['a form body cut short', [`${tokenHead}Content-Length: 1000\r\n\r\ngrant_type=cl`], ''],
    ])('survives %s and keeps serving', async (_, parts, status) => {
      const response = await rawExchange(port(), ...parts)
      expect(response.slice(9, 12)).toBe(status)
      expect((await get(issuer.jwksUri())).status).toBe(200)
    })
  })
})
