import { describe, expect, it } from 'vitest'
import { createChallenger } from '../src/challenge.js'
import {
  DpopNonceError,
  InsufficientScopeError,
  InvalidDpopProofError,
  InvalidTokenError,
  RateLimitedError,
  TokenMissingError,
} from '../src/errors.js'

const METADATA = 'https://api.example.test/.well-known/oauth-protected-resource'
const header = (error: { headers: Record<string, string> }) => error.headers['WWW-Authenticate']

describe('createChallenger', () => {
  it('is the plain RFC 6750 challenge without metadata and DPoP', () => {
    const challenge = createChallenger({
      realm: 'api',
      resourceMetadataUrl: undefined,
      dpop: undefined,
    })
    expect(header(challenge(new InvalidTokenError(), undefined))).toBe(
      'Bearer realm="api", error="invalid_token", error_description="invalid token"',
    )
  })

  it('adds resource_metadata to every challenge (RFC 9728 §5.1), after the RFC 6750 parameters', () => {
    const challenge = createChallenger({
      realm: 'api',
      resourceMetadataUrl: METADATA,
      dpop: undefined,
    })
    expect(header(challenge(new TokenMissingError(), undefined))).toBe(
      `Bearer realm="api", resource_metadata="${METADATA}"`,
    )
    expect(header(challenge(new InsufficientScopeError({ requiredScope: 'a b' }), 'Bearer'))).toBe(
      `Bearer realm="api", error="insufficient_scope", error_description="insufficient scope", scope="a b", resource_metadata="${METADATA}"`,
    )
  })

  it('gives the error to the scheme the request used when DPoP is allowed (RFC 9449 §7.2)', () => {
    const challenge = createChallenger({
      realm: 'api',
      resourceMetadataUrl: undefined,
      dpop: { mode: 'allowed', algorithms: ['ES256', 'EdDSA'] },
    })
    expect(header(challenge(new InvalidTokenError(), 'Bearer'))).toBe(
      'Bearer realm="api", error="invalid_token", error_description="invalid token", DPoP realm="api", algs="ES256 EdDSA"',
    )
    expect(header(challenge(new InvalidTokenError(), 'DPoP'))).toBe(
      'Bearer realm="api", DPoP realm="api", error="invalid_token", error_description="invalid token", algs="ES256 EdDSA"',
    )
    expect(header(challenge(new InvalidDpopProofError(), 'Bearer'))).toBe(
      'Bearer realm="api", DPoP realm="api", error="invalid_dpop_proof", error_description="invalid DPoP proof", algs="ES256 EdDSA"',
    )
  })

  it('challenges with DPoP alone when DPoP is required, nonces included', () => {
    const challenge = createChallenger({
      realm: 'api',
      resourceMetadataUrl: METADATA,
      dpop: { mode: 'required', algorithms: ['ES256'] },
    })
    const error = challenge(new DpopNonceError({ nonce: 'n-1' }), 'DPoP')
    expect(error.headers).toEqual({
      'DPoP-Nonce': 'n-1',
      'WWW-Authenticate': `DPoP realm="api", error="use_dpop_nonce", error_description="DPoP nonce required", algs="ES256", resource_metadata="${METADATA}"`,
    })
  })

  it('builds each kind of challenge once, and never hands one kind another kind’s value', () => {
    const challenge = createChallenger({
      realm: 'api',
      resourceMetadataUrl: undefined,
      dpop: undefined,
    })
    // More distinct scopes than the challenger keeps built: past its bound it builds per refusal.
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 100; i++) {
        expect(
          header(challenge(new InsufficientScopeError({ requiredScope: `s${i}` }), 'Bearer')),
        ).toBe(
          `Bearer realm="api", error="insufficient_scope", error_description="insufficient scope", scope="s${i}"`,
        )
        expect(header(challenge(new TokenMissingError(), 'Bearer'))).toBe('Bearer realm="api"')
      }
    }
  })

  it('adds no challenge to errors that call for none', () => {
    const challenge = createChallenger({
      realm: 'api',
      resourceMetadataUrl: METADATA,
      dpop: { mode: 'allowed', algorithms: ['ES256'] },
    })
    expect(
      header(challenge(new RateLimitedError({ retryAfterSeconds: 1 }), 'DPoP')),
    ).toBeUndefined()
  })
})
