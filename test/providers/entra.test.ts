/**
 * `entra()` on Microsoft Entra ID's token shapes: v2.0 and v1.0 issuers, `scp` delegated scopes,
 * `roles` app permissions, `tid` as tenant; the multi-tenant allow-list bound to the common key
 * set, a token of another tenant signed by those same keys refused, an ID token refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { entra, requireRealmRoles, requireScopes } from '../../src/index.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { type ProviderGate, providerGate } from './provider-gate.js'
import {
  ENTRA,
  entraV1UserToken,
  entraV2AppToken,
  entraV2IdToken,
  entraV2UserToken,
} from './shapes.js'

const COMMON_KEYS = 'https://login.microsoftonline.com/common/discovery/v2.0/keys'

let kit: TestIssuer
beforeAll(async () => {
  kit = await createTestIssuer()
})
afterAll(async () => {
  await kit.close()
})

describe('entra({ tenant })', () => {
  let gate: ProviderGate
  beforeAll(() => {
    gate = providerGate(kit, entra({ tenant: ENTRA.tenant, audience: ENTRA.api }), {
      tenant: { claim: 'tid' },
    })
  })
  afterAll(() => gate.close())

  it('builds the v2.0 issuer and the tenant’s own key set', () => {
    expect(entra({ tenant: ENTRA.tenant, audience: ENTRA.api })).toEqual([
      {
        issuer: `https://login.microsoftonline.com/${ENTRA.tenant}/v2.0`,
        jwksUri: `https://login.microsoftonline.com/${ENTRA.tenant}/discovery/v2.0/keys`,
        audience: [ENTRA.api],
        accessTokenClaims: { tid: ENTRA.tenant },
        claims: { scopes: ['scp'], roles: ['roles'], clientId: ['azp', 'appid'] },
      },
    ])
  })

  it('admits a delegated v2.0 token: scp scopes, azp client, tid tenant', async () => {
    const result = await gate.check(await kit.mint(entraV2UserToken()))
    expect(result.reason).toBeUndefined()
    expect(result.auth?.scopes).toEqual(['access_as_user', 'Tasks.Read'])
    expect(result.auth?.clientId).toBe(ENTRA.client)
    expect(result.auth?.tenant).toBe(ENTRA.tenant)
  })

  it('admits an app-only token and checks its app permissions (roles) with requireRealmRoles', async () => {
    const result = await gate.check(await kit.mint(entraV2AppToken()))
    expect(result.auth?.roles.realm).toEqual(['Tasks.Read.All'])
    expect(result.auth?.scopes).toEqual([])
    expect(() => requireRealmRoles('Tasks.Read.All')(result.auth)).not.toThrow()
    expect(() => requireScopes('Tasks.Read')(result.auth)).toThrow()
  })

  it('refuses an ID token of the same app registration (aud matches, but it is no access token)', async () => {
    const result = await gate.check(await kit.mint(entraV2IdToken()))
    expect(result.reason).toBe('token_type')
  })

  it('refuses a v1.0 token at a v2 profile, showing its sts.windows.net issuer', async () => {
    const result = await gate.check(await kit.mint(entraV1UserToken()))
    expect(result).toMatchObject({
      reason: 'unknown_issuer',
      detail: { unverifiedIss: `https://sts.windows.net/${ENTRA.tenant}/` },
    })
  })
})

describe('entra({ tenant, version: 1 })', () => {
  it('admits a v1.0 token: sts.windows.net issuer, App ID URI audience, appid client', async () => {
    const entries = entra({
      tenant: ENTRA.tenant,
      audience: [ENTRA.api, ENTRA.appIdUri],
      version: 1,
    })
    expect(entries[0]?.issuer).toBe(`https://sts.windows.net/${ENTRA.tenant}/`)
    const gate = providerGate(kit, entries)
    const result = await gate.check(await kit.mint(entraV1UserToken()))
    await gate.close()
    expect(result.auth?.clientId).toBe(ENTRA.client)
    expect(result.auth?.scopes).toEqual(['access_as_user'])
  })
})

describe('entra({ tenants }) (multi-tenant)', () => {
  let gate: ProviderGate
  beforeAll(() => {
    gate = providerGate(
      kit,
      entra({ tenants: [ENTRA.tenant, ENTRA.customer], audience: ENTRA.api }),
      {
        tenant: { claim: 'tid' },
      },
    )
  })
  afterAll(() => gate.close())

  it('binds every listed tenant’s issuer to the common key set', () => {
    const entries = entra({ tenants: [ENTRA.tenant, ENTRA.customer], audience: ENTRA.api })
    expect(entries.map((entry) => [entry.issuer, entry.jwksUri])).toEqual([
      [`https://login.microsoftonline.com/${ENTRA.tenant}/v2.0`, COMMON_KEYS],
      [`https://login.microsoftonline.com/${ENTRA.customer}/v2.0`, COMMON_KEYS],
    ])
  })

  it('lists a tenant id given in upper and lower case once, in the lower case tokens carry', () => {
    const entries = entra({
      tenants: [ENTRA.tenant.toUpperCase(), ENTRA.tenant],
      audience: ENTRA.api,
    })
    expect(entries.map((entry) => entry.issuer)).toEqual([
      `https://login.microsoftonline.com/${ENTRA.tenant}/v2.0`,
    ])
  })

  it('admits the tokens of each listed tenant, each with its own tenant', async () => {
    const own = await gate.check(await kit.mint(entraV2UserToken(ENTRA.tenant)))
    const customer = await gate.check(await kit.mint(entraV2UserToken(ENTRA.customer)))
    expect([own.auth?.tenant, customer.auth?.tenant]).toEqual([ENTRA.tenant, ENTRA.customer])
    expect(new Set(gate.fetched)).toEqual(new Set([COMMON_KEYS]))
  })

  it('refuses a token whose tid is not the tenant of its iss, naming the claim', async () => {
    // Signed by the common keys, issued for a listed tenant, but about another one.
    const result = await gate.check(
      await kit.mint(entraV2UserToken(ENTRA.tenant, { tid: ENTRA.customer })),
    )
    expect(result).toMatchObject({
      reason: 'token_type',
      status: 401,
      detail: { claim: 'tid', expected: ENTRA.tenant, found: ENTRA.customer },
    })
    const stranger = await gate.check(
      await kit.mint(entraV2UserToken(ENTRA.customer, { tid: ENTRA.stranger })),
    )
    expect(stranger).toMatchObject({ reason: 'token_type', detail: { claim: 'tid' } })
  })

  it('refuses a token without tid', async () => {
    const result = await gate.check(
      await kit.mint(entraV2UserToken(ENTRA.tenant, { tid: undefined })),
    )
    expect(result).toMatchObject({
      reason: 'token_type',
      detail: { claim: 'tid', expected: ENTRA.tenant, found: 'undefined' },
    })
  })

  it('refuses a token of a tenant not listed, though the common keys sign it and its aud is the app', async () => {
    const result = await gate.check(await kit.mint(entraV2UserToken(ENTRA.stranger)))
    expect(result).toMatchObject({
      reason: 'unknown_issuer',
      status: 401,
      detail: { unverifiedIss: `https://login.microsoftonline.com/${ENTRA.stranger}/v2.0` },
    })
  })
})

describe('entra() options', () => {
  it.each<[string, Record<string, unknown>, RegExp]>([
    [
      '"common" as a tenant',
      { tenants: ['common'], audience: 'x' },
      /"common", "organizations" and domain names never appear/,
    ],
    [
      'a tenant id followed by a path to "common"',
      { tenants: [`${ENTRA.tenant}/../common`], audience: 'x' },
      /"tenants" must list directory \(tenant\) ids, GUIDs/,
    ],
    [
      'a tenant id with a trailing newline',
      { tenant: `${ENTRA.tenant}\n`, audience: 'x' },
      /"tenant" must list directory \(tenant\) ids, GUIDs/,
    ],
    [
      'a domain name as the tenant',
      { tenant: 'contoso.onmicrosoft.com', audience: 'x' },
      /directory \(tenant\) ids, GUIDs/,
    ],
    [
      'both tenant and tenants',
      { tenant: ENTRA.tenant, tenants: [ENTRA.tenant], audience: 'x' },
      /not both or neither/,
    ],
    ['version 3', { tenant: ENTRA.tenant, audience: 'x', version: 3 }, /"version" must be 1 or 2/],
    [
      'no audience',
      { tenant: ENTRA.tenant },
      /"audience" must be the API's application \(client\) id/,
    ],
  ])('refuses %s at construction', (_name, options, message) => {
    expect(() => entra(options as never)).toThrow(message)
  })
})
