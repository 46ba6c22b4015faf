/**
 * The verifier's refusals as operators see them: what the `rejected` event's `detail` carries
 * for a token whose issuer is not configured (a Keycloak `authUrl` that already ended in `/realms/…`
 * once made every request `unknown_issuer` with no detail), and that the client never sees it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { AnyTollgateError } from '../../src/errors.js'
import { createGate, type GateEvent, keycloak } from '../../src/index.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'

let issuer: TestIssuer
beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme', 'beta'], audience: 'gateway' })
})
afterAll(async () => {
  await issuer.close()
})

/** The rejected event and the error of one token, at a gate trusting `realms` only. */
async function refusalOf(token: string, realms = ['acme']) {
  const events: GateEvent[] = []
  const gate = createGate({
    issuers: keycloak({ authUrl: issuer.url, realms }),
    audience: 'gateway',
    onEvent: (event) => events.push(event),
  })
  const error = (await gate.check({ headers: { authorization: `Bearer ${token}` } }).then(
    () => undefined,
    (caught: unknown) => caught,
  )) as AnyTollgateError
  await gate.close()
  const rejected = events.find((event) => event.type === 'rejected')
  return { error, rejected: rejected as Extract<GateEvent, { type: 'rejected' }> }
}

describe('unknown_issuer', () => {
  it('names the token’s unverified iss and the configured issuers in the rejected event', async () => {
    const { rejected } = await refusalOf(await issuer.mint({}, { realm: 'beta' }))
    expect(rejected).toMatchObject({
      reason: 'unknown_issuer',
      status: 401,
      detail: { unverifiedIss: issuer.issuer('beta'), expected: [issuer.issuer('acme')] },
    })
  })

  it('lists every configured issuer when several are', async () => {
    const { rejected } = await refusalOf(
      await issuer.mint({ iss: 'https://sso.example.com/realms/acme/realms/acme' }),
      ['acme', 'beta'],
    )
    expect(rejected.detail).toEqual({
      unverifiedIss: 'https://sso.example.com/realms/acme/realms/acme',
      configured: 2,
      expected: [issuer.issuer('acme'), issuer.issuer('beta')],
    })
  })

  it('bounds the unverified iss to 200 characters and strips control, format and line-separator characters', async () => {
    const hostile = `https://evil.example/\n[INFO] forged line\r\u0000\u202eX\u2028${'a'.repeat(500)}`
    const { rejected } = await refusalOf(await issuer.mint({ iss: hostile }))
    const shown = rejected.detail?.['unverifiedIss'] as string
    expect(shown).toHaveLength(200)
    expect(shown.startsWith('https://evil.example/[INFO] forged lineXaaa')).toBe(true)
    expect(shown).not.toMatch(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u)
  })

  it.each<[string, unknown, unknown]>([
    ['a number', 42, '(number)'],
    ['null', null, '(null)'],
    ['an object', { url: 'https://x' }, '(object)'],
    ['no iss at all', undefined, undefined],
  ])('shows only the type of an iss that is %s', async (_case, iss, shown) => {
    const { rejected } = await refusalOf(await issuer.mint({ iss }))
    expect(rejected).toMatchObject({ reason: 'unknown_issuer' })
    expect(rejected.detail?.['unverifiedIss']).toEqual(shown)
  })

  it('never puts the iss in what the client receives', async () => {
    const { error } = await refusalOf(await issuer.mint({}, { realm: 'beta' }))
    expect(error).toMatchObject({ code: 'ERR_TOKEN_INVALID', status: 401 })
    const rendered = JSON.stringify([error.message, error.headers, error.error])
    expect(rendered).not.toContain('beta')
  })
})
