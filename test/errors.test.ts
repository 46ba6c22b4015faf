import { describe, expect, it } from 'vitest'

import {
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
} from '../src/errors.js'

describe('error family', () => {
  it('challenges without an error code when no credentials are sent (RFC 6750 §3.1)', () => {
    expect(new TokenMissingError({ realm: 'api' })).toMatchObject({
      code: 'ERR_TOKEN_MISSING',
      status: 401,
      statusCode: 401,
      expose: true,
      headers: { 'WWW-Authenticate': 'Bearer realm="api"' },
    })
  })

  it('answers 400 invalid_request for malformed requests', () => {
    expect(new InvalidRequestError('malformed bearer credentials', { realm: 'api' })).toMatchObject(
      {
        code: 'ERR_INVALID_REQUEST',
        status: 400,
        headers: {
          'WWW-Authenticate':
            'Bearer realm="api", error="invalid_request", error_description="malformed bearer credentials"',
        },
      },
    )
  })

  it('makes TokenExpiredError a kind of InvalidTokenError with its own code', () => {
    const error = new TokenExpiredError({ realm: 'api' })
    expect(error).toBeInstanceOf(InvalidTokenError)
    expect(error).toMatchObject({
      code: 'ERR_TOKEN_EXPIRED',
      status: 401,
      name: 'TokenExpiredError',
      headers: {
        'WWW-Authenticate':
          'Bearer realm="api", error="invalid_token", error_description="token expired"',
      },
    })
  })

  it('answers 403 insufficient_scope with the required scope', () => {
    expect(
      new InsufficientScopeError('billing:read billing:write', { realm: 'api' }),
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
    expect(new TenantRefusedError({ realm: 'api' })).toMatchObject({
      code: 'ERR_TENANT_REFUSED',
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
      expect(new RateLimitedError(seconds).headers['Retry-After']).toBe(header)
    },
  )

  it('keeps rate-limit headers on a 429', () => {
    const error = new RateLimitedError(3, { RateLimit: '"default";r=0;t=3' })
    expect(error.headers).toEqual({ RateLimit: '"default";r=0;t=3', 'Retry-After': '3' })
  })

  it('answers 503 with Retry-After and does not expose its message', () => {
    const error = new ServiceUnavailableError(
      'ERR_JWKS_UNAVAILABLE',
      2.5,
      new Error('ECONNREFUSED 10.0.0.1'),
    )
    expect(error).toMatchObject({ status: 503, expose: false, headers: { 'Retry-After': '3' } })
    expect(error.message).not.toContain('10.0.0.1')
  })

  it('strips characters outside the RFC 6750 charset from challenge values', () => {
    expect(bearerChallenge('a"b\\c\u00e9\n', 'invalid_token', 'x"y', 's"1')).toBe(
      'Bearer realm="abc", error="invalid_token", error_description="xy", scope="s1"',
    )
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
    const rendered = renderError(new InvalidTokenError('invalid token', { realm: 'api' }))
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
    const error: TollgateError = new TokenMissingError({ realm: 'api' })
    error.status = 401
    expect(error.status).toBe(401)
  })
})

describe('error cost', () => {
  it('captures no stack trace for refusals, and leaves the global limit as it was', () => {
    const before = Error.stackTraceLimit
    const error = new InvalidTokenError('invalid token', { realm: 'api' })
    expect(error.stack?.split('\n')).toHaveLength(1)
    expect(Error.stackTraceLimit).toBe(before)
  })

  it('keeps the cause, with its own stack, for operators', () => {
    const cause = new Error('ECONNREFUSED')
    const error = new ServiceUnavailableError('ERR_JWKS_UNAVAILABLE', 1, cause)
    expect(error.cause).toBe(cause)
    expect(cause.stack?.split('\n').length).toBeGreaterThan(1)
  })
})
