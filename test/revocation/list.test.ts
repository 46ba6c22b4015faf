import { describe, expect, it } from 'vitest'

import { type RevocationEntry, RevocationList } from '../../src/revocation/list.js'
import type { Admission } from '../../src/types.js'

const ISS = 'https://sso.example.com/realms/acme'
const OTHER = 'https://sso.example.com/realms/beta'

function admission(claims: Record<string, unknown>, issuer = ISS): Admission {
  return {
    token: 'x',
    header: { alg: 'RS256' },
    claims: { iss: issuer, exp: 2000, iat: 1000, ...claims },
    issuer,
    realm: undefined,
    subject: typeof claims['sub'] === 'string' ? claims['sub'] : undefined,
    clientId: typeof claims['azp'] === 'string' ? claims['azp'] : undefined,
    scopes: [],
    roles: { realm: [], clients: {} },
    tenant: undefined,
    plan: undefined,
    actor: undefined,
    tokenFor: () => Promise.reject(new Error('no exchanger')),
  }
}

const entry = (
  kind: RevocationEntry['kind'],
  value: string,
  notBefore: number,
  issuer = ISS,
): RevocationEntry => ({ issuer, kind, value, notBefore, expiresAt: 10_000_000 })

describe('RevocationList', () => {
  it('matches nothing when empty', () => {
    expect(new RevocationList().match(admission({ sub: 'alice', sid: 's1', jti: 'j1' }))).toBe(
      undefined,
    )
  })

  it.each([
    ['sid', { sid: 's1' }],
    ['sub', { sub: 'alice' }],
    ['clientId', { azp: 'billing-ui' }],
    ['all', {}],
  ] as const)('refuses a token issued before a %s entry not-before', (kind, claims) => {
    const list = new RevocationList()
    const value = kind === 'all' ? '' : (Object.values(claims)[0] as string)
    list.add(entry(kind, value, 1001))
    expect(list.match(admission({ ...claims, iat: 1000 }))).toBe(kind)
  })

  it.each(['sid', 'sub', 'clientId', 'all'] as const)(
    'admits a token issued at or after a %s entry not-before',
    (kind) => {
      const list = new RevocationList()
      const claims = { sid: 's1', sub: 'alice', azp: 'billing-ui' }
      const value = { sid: 's1', sub: 'alice', clientId: 'billing-ui', all: '' }[kind]
      list.add(entry(kind, value, 1000))
      expect(list.match(admission({ ...claims, iat: 1000 }))).toBe(undefined)
    },
  )

  it('refuses the token a jti entry names, whatever its iat', () => {
    const list = new RevocationList()
    list.add(entry('jti', 'j1', 0))
    expect(list.match(admission({ jti: 'j1', iat: 5000 }))).toBe('jti')
    expect(list.match(admission({ jti: 'j2', iat: 5000 }))).toBe(undefined)
  })

  it('refuses a token without iat when an entry matches (it cannot show it came after)', () => {
    const list = new RevocationList()
    list.add(entry('sub', 'alice', 1))
    expect(list.match(admission({ sub: 'alice', iat: undefined }))).toBe('sub')
  })

  it('keeps entries of one issuer from matching tokens of another', () => {
    const list = new RevocationList()
    list.add(entry('sub', 'alice', 5000))
    expect(list.match(admission({ sub: 'alice' }, OTHER))).toBe(undefined)
  })

  it('keeps a jti entry of one issuer from matching the same jti from another', () => {
    // Each realm picks its own token ids: the same value from another realm is another token.
    const list = new RevocationList()
    list.add(entry('jti', 'j1', 0))
    expect(list.match(admission({ jti: 'j1' }, OTHER))).toBe(undefined)
    expect(list.match(admission({ jti: 'j1' }))).toBe('jti')
  })

  it('ignores claims of the wrong type instead of matching them', () => {
    const list = new RevocationList()
    list.add(entry('sid', '1', 5000))
    list.add(entry('jti', '1', 0))
    expect(list.match(admission({ sid: 1, jti: 1 }))).toBe(undefined)
  })

  it('merges an identity to the later not-before and the later expiry', () => {
    const list = new RevocationList()
    list.add({ ...entry('sub', 'alice', 2000), expiresAt: 50_000 })
    const merged = list.add({ ...entry('sub', 'alice', 1500), expiresAt: 70_000 })
    expect(merged).toMatchObject({ notBefore: 2000, expiresAt: 70_000 })
    expect(list.size).toBe(1)
  })

  it('removes an identity and reports whether it was held', () => {
    const list = new RevocationList()
    list.add(entry('sid', 's1', 5000))
    expect(list.remove(entry('sid', 's1', 0))).toBe(true)
    expect(list.remove(entry('sid', 's1', 0))).toBe(false)
    expect(list.match(admission({ sid: 's1' }))).toBe(undefined)
    expect(list.size).toBe(0)
  })

  it('sweeps entries once they expire', () => {
    const list = new RevocationList()
    list.add({ ...entry('sid', 's1', 5000), expiresAt: 100_000 })
    list.add({ ...entry('sid', 's2', 5000), expiresAt: 200_000 })
    list.sweep(150_000)
    expect(list.entries().map((held) => held.value)).toEqual(['s2'])
  })

  it('keeps expiries in whole seconds, rounded up (never shorter than asked)', () => {
    const list = new RevocationList()
    expect(list.add({ ...entry('sid', 's1', 5000), expiresAt: 100_001 })).toMatchObject({
      expiresAt: 101_000,
    })
    list.sweep(100_999)
    expect(list.size).toBe(1)
  })

  it('holds exactly the copy the store says is current with set(), weaker or not', () => {
    const list = new RevocationList()
    list.add(entry('sub', 'bob', 5000))
    list.set(entry('sub', 'bob', 3000))
    expect(list.get(entry('sub', 'bob', 0))).toMatchObject({ notBefore: 3000 })
    expect(list.match(admission({ sub: 'bob', iat: 4000 }))).toBe(undefined)
    expect(list.size).toBe(1)
  })
})

describe('RevocationList, a revoked jti whatever the token says of its time', () => {
  it.each([
    ['no iat', undefined],
    ['an iat after the revocation', 5000],
    ['an iat that is a string', '1000'],
  ])('refuses it with %s', (_label, iat) => {
    const list = new RevocationList()
    list.add(entry('jti', 'j1', 1001))
    expect(list.match(admission({ jti: 'j1', iat }))).toBe('jti')
    expect(list.match(admission({ jti: 'j2', iat }))).toBe(undefined)
  })

  it.each([
    ['no iat', undefined],
    ['an iat that is a string', '1000'],
  ])(
    'refuses a sub entry’s token with %s (no time to prove it was issued after)',
    (_label, iat) => {
      const list = new RevocationList()
      list.add(entry('sub', 'alice', 1001))
      expect(list.match(admission({ sub: 'alice', iat }))).toBe('sub')
    },
  )
})
