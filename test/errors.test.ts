import { describe, expect, it } from 'vitest'

import {
  type AnyTollgateError,
  bearerChallenge,
  InsufficientScopeError,
  InvalidRequestError,
  InvalidTokenError,
  isTollgateError,
  RateLimitedError,
  renderError,
  ServiceUnavailableError,
  TenantRefusedError,
  TokenExpiredError,
  TokenMissingError,
  type TollgateError,
  withChallenge,
} from '../src/errors.js'

describe('error family', () => {
  it('challenges without an error code when no credentials are sent (RFC 6750 §3.1)', () => {
    expect(withChallenge(new TokenMissingError(), 'api')).toMatchObject({
      code: 'ERR_TOKEN_MISSING',
      reason: 'credentials_missing',
      status: 401,
      statusCode: 401,
      expose: true,
      headers: { 'WWW-Authenticate': 'Bearer realm="api"' },
    })
  })

  it('carries no challenge until a gate adds the one of its realm', () => {
    const error = new InvalidTokenError({ reason: 'audience' })
    expect(error.headers).toEqual({})
    expect(withChallenge(error, 'shop').headers).toEqual({
      'WWW-Authenticate':
        'Bearer realm="shop", error="invalid_token", error_description="invalid token"',
    })
  })

  it.each([
    ['malformed_credentials', 'malformed bearer credentials'],
    ['repeated_authorization', 'more than one Authorization header'],
    ['token_sent_twice', 'access token sent more than one way'],
  ] as const)('answers 400 invalid_request for %s with a fixed description', (reason, text) => {
    expect(withChallenge(new InvalidRequestError({ reason }), 'api')).toMatchObject({
      code: 'ERR_INVALID_REQUEST',
      reason,
      status: 400,
      message: text,
      headers: {
        'WWW-Authenticate': `Bearer realm="api", error="invalid_request", error_description="${text}"`,
      },
    })
  })

  it('makes TokenExpiredError a kind of InvalidTokenError with its own code', () => {
    const error = withChallenge(new TokenExpiredError(), 'api')
    expect(error).toBeInstanceOf(InvalidTokenError)
    expect(error).toMatchObject({
      code: 'ERR_TOKEN_EXPIRED',
      reason: 'expired',
      status: 401,
      name: 'TokenExpiredError',
      headers: {
        'WWW-Authenticate':
          'Bearer realm="api", error="invalid_token", error_description="token expired"',
      },
    })
  })

  it('keeps the reason and the operator detail out of the message and the rendered body', () => {
    const error = new InvalidTokenError({
      reason: 'audience',
      detail: { aud: 'account', expected: ['gateway'] },
    })
    expect(error).toMatchObject({ reason: 'audience', detail: { aud: 'account' } })
    const { body, headers } = renderError(withChallenge(error, 'api'))
    expect(body).toBe('{"error":"invalid_token","error_description":"invalid token"}')
    expect(JSON.stringify(headers)).not.toContain('account')
  })

  it('answers 403 insufficient_scope with the required scope', () => {
    expect(
      withChallenge(
        new InsufficientScopeError({ requiredScope: 'billing:read billing:write' }),
        'api',
      ),
    ).toMatchObject({
      code: 'ERR_INSUFFICIENT_SCOPE',
      status: 403,
      headers: {
        'WWW-Authenticate':
          'Bearer realm="api", error="insufficient_scope", error_description="insufficient scope", scope="billing:read billing:write"',
      },
    })
  })

  it('answers 403 without a challenge for a refused tenant', () => {
    expect(withChallenge(new TenantRefusedError(), 'api')).toMatchObject({
      code: 'ERR_TENANT_REFUSED',
      reason: 'tenant_refused',
      status: 403,
      headers: {},
    })
  })

  it.each([
    [0.2, '1'],
    [1, '1'],
    [1.01, '2'],
    [-5, '1'],
  ])(
    'rounds Retry-After of a 429 up to whole seconds, at least 1 (%s s → %s)',
    (seconds, header) => {
      expect(new RateLimitedError({ retryAfterSeconds: seconds }).headers['Retry-After']).toBe(
        header,
      )
    },
  )

  it('keeps rate-limit headers on a 429, and never adds a challenge', () => {
    const error = withChallenge(
      new RateLimitedError({ retryAfterSeconds: 3, headers: { RateLimit: '"default";r=0;t=3' } }),
      'api',
    )
    expect(error.headers).toEqual({ RateLimit: '"default";r=0;t=3', 'Retry-After': '3' })
  })

  it('answers 503 with Retry-After and does not expose its message', () => {
    const error = new ServiceUnavailableError({
      code: 'ERR_JWKS_UNAVAILABLE',
      retryAfterSeconds: 2.5,
      cause: new Error('ECONNREFUSED 10.0.0.1'),
    })
    expect(error).toMatchObject({
      status: 503,
      expose: false,
      reason: 'jwks_unavailable',
      headers: { 'Retry-After': '3' },
    })
    expect(error.message).not.toContain('10.0.0.1')
  })

  it('strips characters outside the RFC 6750 charset from challenge values', () => {
    expect(bearerChallenge('a"b\\c\u00e9\n', 'invalid_token', 'x"y', 's"1')).toBe(
      'Bearer realm="abc", error="invalid_token", error_description="xy", scope="s1"',
    )
  })

  it('narrows the union on code', () => {
    const error: AnyTollgateError = new ServiceUnavailableError({
      code: 'ERR_LIMITER_UNAVAILABLE',
      retryAfterSeconds: 1,
    })
    if (error.code === 'ERR_LIMITER_UNAVAILABLE') {
      // Only ServiceUnavailableError has retryAfterSeconds among the codes that narrow here.
      expect(error.retryAfterSeconds).toBe(1)
    } else {
      expect.unreachable()
    }
  })

  it('recognizes errors from another copy of the package by shape', () => {
    const foreign = Object.assign(new Error('x'), {
      code: 'ERR_TOKEN_INVALID',
      status: 401,
      headers: {},
    })
    expect(isTollgateError(foreign)).toBe(true)
    expect(
      isTollgateError(
        Object.assign(new Error('x'), { code: 'ECONNRESET', status: 1, headers: {} }),
      ),
    ).toBe(false)
    expect(isTollgateError({ code: 'ERR_TOKEN_INVALID', status: 401, headers: {} })).toBe(false)
    expect(isTollgateError(null)).toBe(false)
  })

  it('renders a tollgate error as JSON with its status and headers, uncacheable', () => {
    const rendered = renderError(withChallenge(new InvalidTokenError(), 'api'))
    expect(rendered.status).toBe(401)
    expect(rendered.headers).toMatchObject({
      'Content-Type': 'application/json; charset=utf-8',
      'Cache-Control': 'no-store',
      'WWW-Authenticate':
        'Bearer realm="api", error="invalid_token", error_description="invalid token"',
    })
    expect(JSON.parse(rendered.body)).toEqual({
      error: 'invalid_token',
      error_description: 'invalid token',
    })
  })

  it('renders anything else as a bare 500 that reveals nothing', () => {
    const rendered = renderError(new Error('secret detail at /srv/app.js:12'))
    expect(rendered.status).toBe(500)
    expect(rendered.body).not.toContain('secret')
    expect(JSON.parse(rendered.body)).toEqual({
      error: 'server_error',
      error_description: 'internal error',
    })
  })

  it('keeps fields writable, as Koa assigns err.status while rendering', () => {
    const error: TollgateError = new TokenMissingError()
    error.status = 401
    expect(error.status).toBe(401)
  })
})

describe('error cost', () => {
  it('captures no stack trace for refusals, and leaves the global limit as it was', () => {
    const before = Error.stackTraceLimit
    const error = new InvalidTokenError()
    expect(error.stack?.split('\n')).toHaveLength(1)
    expect(Error.stackTraceLimit).toBe(before)
  })

  it('keeps the cause, with its own stack, for operators', () => {
    const cause = new Error('ECONNREFUSED')
    const error = new ServiceUnavailableError({
      code: 'ERR_JWKS_UNAVAILABLE',
      retryAfterSeconds: 1,
      cause,
    })
    expect(error.cause).toBe(cause)
    expect(cause.stack?.split('\n').length).toBeGreaterThan(1)
  })
})
