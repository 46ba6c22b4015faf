import { describe, expect, it } from 'vitest'
import { createGate, type Gate } from '../../src/gate/gate.js'
import {
  createResourceMetadata,
  metadataUrlOf,
  normalizeResourceMetadataOptions,
} from '../../src/metadata/resource-metadata.js'
import { keycloak } from '../../src/token/issuers.js'

describe('metadataUrlOf', () => {
  it.each([
    ['https://api.example.test', 'https://api.example.test/.well-known/oauth-protected-resource'],
    ['https://api.example.test/', 'https://api.example.test/.well-known/oauth-protected-resource'],
    [
      'https://api.example.test/mcp',
      'https://api.example.test/.well-known/oauth-protected-resource/mcp',
    ],
    [
      'https://api.example.test/a/b/',
      'https://api.example.test/.well-known/oauth-protected-resource/a/b',
    ],
    ['http://127.0.0.1:8080/mcp', 'http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp'],
  ])('inserts the well-known path between host and path of %s (RFC 9728 §3.1)', (resource, url) => {
    expect(metadataUrlOf(resource)).toBe(url)
  })
})

describe('normalizeResourceMetadataOptions', () => {
  it.each([
    [{}, '"resourceMetadata.resource" must be an https URL'],
    [{ resource: 'http://api.example.test/' }, '"resourceMetadata.resource" must be an https URL'],
    [{ resource: 'https://api.example.test/#x' }, '"resourceMetadata.resource"'],
    [{ resource: 'https://api.example.test/?a=1' }, '"resourceMetadata.resource"'],
    [{ resource: 'https://u:p@api.example.test/' }, '"resourceMetadata.resource"'],
    [{ resource: 'https://a.test', scopesSupported: [''] }, '"resourceMetadata.scopesSupported"'],
    [{ resource: 'https://a.test', extra: [] }, '"resourceMetadata.extra" must be an object'],
    [
      { resource: 'https://a.test', extra: { authorization_servers: [] } },
      '"resourceMetadata.extra.authorization_servers" is derived',
    ],
    [{ resource: 'https://a.test', extra: { n: 1n } }, '"resourceMetadata.extra" must be JSON'],
    [{ resource: 'https://a.test', scopes: [] }, '"resourceMetadata.scopes" is not an option'],
  ])('refuses %o', (options, message) => {
    expect(() => normalizeResourceMetadataOptions(options)).toThrow(message)
  })
})

describe('createResourceMetadata', () => {
  const metadata = createResourceMetadata(
    normalizeResourceMetadataOptions({ resource: 'https://api.example.test/mcp' }) as never,
    {
      authorizationServers: ['https://sso.example.test/realms/acme'],
      dpop: { algorithms: ['ES256'], required: false },
    },
  )

  it('derives the document from the gate: issuers, header-only bearer tokens, DPoP members', () => {
    expect(metadata.document).toEqual({
      resource: 'https://api.example.test/mcp',
      authorization_servers: ['https://sso.example.test/realms/acme'],
      bearer_methods_supported: ['header'],
      dpop_signing_alg_values_supported: ['ES256'],
      dpop_bound_access_tokens_required: false,
    })
  })

  it('lists no bearer method when DPoP is required: bearer tokens are refused (RFC 9728 §2)', () => {
    const options = normalizeResourceMetadataOptions({ resource: 'https://api.example.test/mcp' })
    const required = createResourceMetadata(options as never, {
      authorizationServers: ['https://sso.example.test/realms/acme'],
      dpop: { algorithms: ['ES256'], required: true },
    })
    expect(required.document).toMatchObject({
      bearer_methods_supported: [],
      dpop_bound_access_tokens_required: true,
    })
  })

  it('says certificate-bound tokens are accepted when mtls is on (RFC 9728 §2)', () => {
    const context = {
      authorizationServers: ['https://sso.example.test/realms/acme'],
      dpop: undefined,
    }
    const options = normalizeResourceMetadataOptions({ resource: 'https://api.example.test/mcp' })
    expect(
      createResourceMetadata(options as never, { ...context, mtls: true }).document,
    ).toMatchObject({ tls_client_certificate_bound_access_tokens: true })
    expect(createResourceMetadata(options as never, context).document).not.toHaveProperty(
      'tls_client_certificate_bound_access_tokens',
    )
    expect(() =>
      normalizeResourceMetadataOptions({
        resource: 'https://api.example.test/mcp',
        extra: { tls_client_certificate_bound_access_tokens: false },
      }),
    ).toThrow('tls_client_certificate_bound_access_tokens')
  })

  it('answers GET and HEAD of its path only', () => {
    const path = '/.well-known/oauth-protected-resource/mcp'
    expect(metadata.respond({ method: 'GET', url: path, headers: {} })?.status).toBe(200)
    expect(metadata.respond({ method: 'HEAD', url: `${path}?a=b`, headers: {} })?.status).toBe(200)
    for (const [method, url] of [
      ['POST', path],
      ['GET', `${path}/x`],
      ['GET', '/.well-known/oauth-protected-resource'],
      ['GET', undefined],
    ]) {
      expect(metadata.respond({ method, url, headers: {} })).toBeUndefined()
    }
  })
})

describe('resourceMetadata.authorizationServers', () => {
  const issuers = keycloak({ authUrl: 'https://sso.example.test', realms: ['acme', 'beta'] })
  const metadataOf = (gate: Gate) =>
    JSON.parse(
      gate.resourceMetadata({
        method: 'GET',
        url: '/.well-known/oauth-protected-resource/mcp',
        headers: {},
      })?.body as string,
    ) as Record<string, unknown>

  it('lists every configured issuer by default', async () => {
    const gate = createGate({
      issuers,
      audience: 'https://api.example.test/mcp',
      resourceMetadata: { resource: 'https://api.example.test/mcp' },
    })
    expect(metadataOf(gate).authorization_servers).toEqual([
      'https://sso.example.test/realms/acme',
      'https://sso.example.test/realms/beta',
    ])
    await gate.close()
  })

  it('narrows the published list to the issuers named', async () => {
    const gate = createGate({
      issuers,
      audience: 'https://api.example.test/mcp',
      resourceMetadata: {
        resource: 'https://api.example.test/mcp',
        authorizationServers: ['https://sso.example.test/realms/beta'],
      },
    })
    expect(metadataOf(gate).authorization_servers).toEqual(['https://sso.example.test/realms/beta'])
    await gate.close()
  })

  it.each([
    [[], 'must be a non-empty array of configured issuers'],
    ['https://sso.example.test/realms/beta', 'must be a non-empty array'],
    [[''], 'must be a non-empty array'],
    [['https://sso.example.test/realms/gamma'], 'may only list configured issuers'],
    [['https://sso.example.test/realms/beta/'], 'may only list configured issuers'],
  ])('refuses %j at construction', (authorizationServers, message) => {
    expect(() =>
      createGate({
        issuers,
        audience: 'https://api.example.test/mcp',
        resourceMetadata: {
          resource: 'https://api.example.test/mcp',
          authorizationServers: authorizationServers as string[],
        },
      }),
    ).toThrow(`"resourceMetadata.authorizationServers" ${message}`)
  })
})
