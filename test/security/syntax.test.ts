/**
 * Attack class: token syntax (RFC 7515 §7.1 compact serialization). Segment counts, JWE and JSON
 * serializations where a compact JWS is expected, non-canonical base64url, bad JSON, non-UTF-8,
 * nested and oversized tokens. Most of these are signed with the issuer's real key: the refusal
 * must come from the syntax, not from a missing signature.
 */
import { createPublicKey, KeyObject } from 'node:crypto'

import { CompactEncrypt, FlattenedSign } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { BAD_REQUEST, bearer, type Case, INVALID_TOKEN, OK, useApps } from './helpers.js'
import {
  accessClaims,
  b64,
  decode,
  type Json,
  kidOf,
  parts,
  privateKeyOf,
  publicJwkOf,
  signInput,
} from './tokens.js'

let issuer: TestIssuer
let kid: string
let valid: string

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  kid = await kidOf(issuer, 'RS256')
  valid = await issuer.mint({ aud: 'gateway' }, { expiresInSeconds: 3600 })
})
afterAll(async () => {
  await issuer.close()
})

const apps = useApps(() => ({
  issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
  audience: 'gateway',
}))

const header = (): Json => ({ alg: 'RS256', typ: 'JWT', kid })
const claims = (overrides: Json = {}): Json =>
  accessClaims(issuer, { exp: 4_102_444_800, ...overrides })

/** Signs raw header and payload *segments* (already encoded) with the realm's RS256 key. */
function signSegments(headerSegment: string, payloadSegment: string): string {
  const input = `${headerSegment}.${payloadSegment}`
  return `${input}.${signInput(privateKeyOf(issuer, kid), 'RS256', input).toString('base64url')}`
}

/** Signs raw header and payload *bytes* with the realm's RS256 key. */
function signBytes(headerBytes: Buffer | string, payloadBytes: Buffer | string): string {
  const encode = (value: Buffer | string) =>
    (typeof value === 'string' ? Buffer.from(value, 'latin1') : value).toString('base64url')
  return signSegments(encode(headerBytes), encode(payloadBytes))
}

/** Every spelling of the last character that decodes to the same bytes, except the canonical one. */
function aliasesOfLast(segment: string): string[] {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  const rest = segment.length % 4
  const mask = rest === 2 ? 0x0f : rest === 3 ? 0x03 : 0
  const last = alphabet.indexOf(segment.at(-1) as string)
  const aliases: string[] = []
  for (let low = 1; low <= mask; low++) {
    aliases.push(`${segment.slice(0, -1)}${alphabet[(last & ~mask) | low]}`)
  }
  return aliases
}

const segmentCounts: Case[] = [
  ['one segment', () => bearer(parts(valid)[0]), INVALID_TOKEN],
  [
    'two segments (signature dropped with its dot)',
    () => bearer(parts(valid).slice(0, 2).join('.')),
    INVALID_TOKEN,
  ],
  [
    'an empty signature segment',
    () => bearer(`${parts(valid).slice(0, 2).join('.')}.`),
    INVALID_TOKEN,
  ],
  [
    'an empty payload segment',
    () => bearer(`${parts(valid)[0]}..${parts(valid)[2]}`),
    INVALID_TOKEN,
  ],
  [
    'an empty header segment',
    () => bearer(`.${parts(valid)[1]}.${parts(valid)[2]}`),
    INVALID_TOKEN,
  ],
  ['only dots', () => bearer('..'), INVALID_TOKEN],
  [
    'four segments (valid token plus one)',
    () => bearer(`${valid}.${parts(valid)[2]}`),
    INVALID_TOKEN,
  ],
  ['a trailing dot after a valid token', () => bearer(`${valid}.`), INVALID_TOKEN],
  ['a leading dot before a valid token', () => bearer(`.${valid}`), INVALID_TOKEN],
  ['a valid token twice, joined by a dot', () => bearer(`${valid}.${valid}`), INVALID_TOKEN],
  ['a doubled dot inside', () => bearer(valid.replace('.', '..')), INVALID_TOKEN],
]

const serializations: Case[] = [
  [
    'a JWE (five segments) encrypted to the issuer key',
    async () => {
      const key = createPublicKey({ key: publicJwkOf(issuer, kid) as never, format: 'jwk' })
      const jwe = await new CompactEncrypt(Buffer.from(JSON.stringify(claims())))
        .setProtectedHeader({ alg: 'RSA-OAEP-256', enc: 'A256GCM', kid })
        .encrypt(key)
      return bearer(jwe)
    },
    INVALID_TOKEN,
  ],
  [
    'a JWE-shaped token with PBES2 and a huge p2c (jose resource exhaustion)',
    () =>
      bearer(
        `${b64({ alg: 'PBES2-HS512+A256KW', enc: 'A256GCM', p2c: 2_000_000_000, p2s: 'AAAAAAAAAAAAAAAAAAAAAA' })}.AAAA.AAAAAAAAAAAAAAAA.AAAA.AAAAAAAAAAAAAAAAAAAAAA`,
      ),
    INVALID_TOKEN,
  ],
  [
    'the flattened JSON serialization, base64url-encoded as one segment',
    async () => {
      const jws = await new FlattenedSign(Buffer.from(JSON.stringify(claims())))
        .setProtectedHeader(header())
        .sign(privateKeyOf(issuer, kid))
      return bearer(b64(jws))
    },
    INVALID_TOKEN,
  ],
  [
    'the flattened JSON serialization squeezed into three dotted segments',
    async () => {
      const jws = await new FlattenedSign(Buffer.from(JSON.stringify(claims())))
        .setProtectedHeader(header())
        .sign(privateKeyOf(issuer, kid))
      return bearer(`${jws.protected}.${jws.payload}.${jws.signature}`)
    },
    OK,
  ],
  [
    'an unsecured JWT (alg none, no signature)',
    () => bearer(`${b64({ alg: 'none' })}.${b64(claims())}.`),
    INVALID_TOKEN,
  ],
]

const nonCanonical: Case[] = [
  ['standard base64 "+" in the signature', () => bearer(`${valid.slice(0, -2)}+A`), INVALID_TOKEN],
  ['standard base64 "/" in the payload', () => bearer(valid.replace(/\.(.)/, './')), INVALID_TOKEN],
  ['"=" padding on the signature', () => bearer(`${valid}=`), INVALID_TOKEN],
  [
    '"=" padding inside the header segment',
    () => bearer(`${parts(valid)[0]}=.${parts(valid)[1]}.${parts(valid)[2]}`),
    // b64token allows "=" only at the end: malformed credentials.
    BAD_REQUEST,
  ],
  [
    'a header segment of impossible length (4n+1)',
    () => bearer(`${impossibleLength(parts(valid)[0])}.${parts(valid)[1]}.${parts(valid)[2]}`),
    INVALID_TOKEN,
  ],
  [
    'a signature segment of impossible length (4n+1)',
    () => bearer(`${parts(valid)[0]}.${parts(valid)[1]}.${impossibleLength(parts(valid)[2])}`),
    INVALID_TOKEN,
  ],
  [
    'non-zero unused bits in the last signature character',
    () => {
      const [h, p, s] = parts(valid)
      return bearer(`${h}.${p}.${aliasesOfLast(s)[0]}`)
    },
    INVALID_TOKEN,
  ],
  [
    'non-zero unused bits in the last signature character (last alias)',
    () => {
      const [h, p, s] = parts(valid)
      return bearer(`${h}.${p}.${aliasesOfLast(s).at(-1)}`)
    },
    INVALID_TOKEN,
  ],
  [
    'non-zero unused bits in the last header character, validly signed',
    () => bearer(withAliasedSegment('header')),
    INVALID_TOKEN,
  ],
  [
    'non-zero unused bits in the last payload character, validly signed',
    () => bearer(withAliasedSegment('payload')),
    INVALID_TOKEN,
  ],
  [
    'whitespace inside a segment',
    () => bearer(`${parts(valid)[0]}.${parts(valid)[1]} .${parts(valid)[2]}`),
    // "Bearer a.b c" is two credentials: refused before the token is looked at.
    BAD_REQUEST,
  ],
]

const badJson: Case[] = [
  [
    'a header that is not JSON',
    () => bearer(signBytes('{alg:RS256}', JSON.stringify(claims()))),
    INVALID_TOKEN,
  ],
  [
    'a truncated header',
    () => bearer(signBytes(`{"alg":"RS256","kid":"${kid}"`, JSON.stringify(claims()))),
    INVALID_TOKEN,
  ],
  [
    'a header that is a JSON array',
    () => bearer(signBytes(JSON.stringify([header()]), JSON.stringify(claims()))),
    INVALID_TOKEN,
  ],
  [
    'a header that is a JSON string',
    () => bearer(signBytes('"RS256"', JSON.stringify(claims()))),
    INVALID_TOKEN,
  ],
  [
    'a header that is null',
    () => bearer(signBytes('null', JSON.stringify(claims()))),
    INVALID_TOKEN,
  ],
  [
    'an empty header object',
    () => bearer(signBytes('{}', JSON.stringify(claims()))),
    INVALID_TOKEN,
  ],
  [
    'a payload that is a JSON array',
    () => bearer(signBytes(JSON.stringify(header()), JSON.stringify([claims()]))),
    INVALID_TOKEN,
  ],
  [
    'a payload that is a number',
    () => bearer(signBytes(JSON.stringify(header()), '4102444800')),
    INVALID_TOKEN,
  ],
  [
    'a payload that is null',
    () => bearer(signBytes(JSON.stringify(header()), 'null')),
    INVALID_TOKEN,
  ],
  ['an empty payload', () => bearer(`${b64(header())}..${parts(valid)[2]}`), INVALID_TOKEN],
  [
    'a payload with a trailing comma',
    () => bearer(signBytes(JSON.stringify(header()), `${JSON.stringify(claims()).slice(0, -1)},}`)),
    INVALID_TOKEN,
  ],
  [
    'a payload with a comment',
    () => bearer(signBytes(JSON.stringify(header()), `/* hi */${JSON.stringify(claims())}`)),
    INVALID_TOKEN,
  ],
  [
    'a payload with single quotes',
    () =>
      bearer(signBytes(JSON.stringify(header()), JSON.stringify(claims()).replaceAll('"', "'"))),
    INVALID_TOKEN,
  ],
  [
    'two JSON objects in the payload',
    () => bearer(signBytes(JSON.stringify(header()), `${JSON.stringify(claims())}{}`)),
    INVALID_TOKEN,
  ],
  [
    'a payload with a UTF-8 byte order mark',
    () =>
      bearer(
        signBytes(
          JSON.stringify(header()),
          Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(claims()))]),
        ),
      ),
    INVALID_TOKEN,
  ],
  [
    'a payload with surrounding whitespace (still one JSON object)',
    () => bearer(signBytes(JSON.stringify(header()), ` \n${JSON.stringify(claims())}\t `)),
    OK,
  ],
]

const encoding: Case[] = [
  [
    'a payload with an invalid UTF-8 byte (0xff)',
    () =>
      bearer(
        signBytes(
          JSON.stringify(header()),
          Buffer.concat([
            Buffer.from(JSON.stringify(claims()).slice(0, -1)),
            Buffer.from(',"x":"\xff"}', 'latin1'),
          ]),
        ),
      ),
    INVALID_TOKEN,
  ],
  [
    'a payload with an overlong UTF-8 encoding of "/"',
    () =>
      bearer(
        signBytes(
          JSON.stringify(header()),
          Buffer.concat([
            Buffer.from(JSON.stringify(claims()).slice(0, -1)),
            Buffer.from([0x2c, 0x22, 0x78, 0x22, 0x3a, 0x22, 0xc0, 0xaf, 0x22, 0x7d]),
          ]),
        ),
      ),
    INVALID_TOKEN,
  ],
  [
    'a payload with a UTF-8-encoded lone surrogate',
    () =>
      bearer(
        signBytes(
          JSON.stringify(header()),
          Buffer.concat([
            Buffer.from(JSON.stringify(claims()).slice(0, -1)),
            Buffer.from([0x2c, 0x22, 0x78, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]),
          ]),
        ),
      ),
    INVALID_TOKEN,
  ],
  [
    'a header with a latin-1 byte',
    () =>
      bearer(
        signBytes(
          Buffer.from(`{"alg":"RS256","kid":"${kid}","x":"\xe9"}`, 'latin1'),
          JSON.stringify(claims()),
        ),
      ),
    INVALID_TOKEN,
  ],
  [
    'a payload in UTF-16',
    () =>
      bearer(signBytes(JSON.stringify(header()), Buffer.from(JSON.stringify(claims()), 'utf16le'))),
    INVALID_TOKEN,
  ],
  [
    'a payload with a truncated multi-byte sequence at the end of a string',
    () =>
      bearer(
        signBytes(
          JSON.stringify(header()),
          Buffer.concat([
            Buffer.from(JSON.stringify(claims()).slice(0, -1)),
            Buffer.from([0x2c, 0x22, 0x78, 0x22, 0x3a, 0x22, 0xe2, 0x82, 0x22, 0x7d]),
          ]),
        ),
      ),
    INVALID_TOKEN,
  ],
  [
    'a payload with valid multi-byte UTF-8 and a \\u escape (control)',
    () =>
      bearer(
        signBytes(
          JSON.stringify(header()),
          Buffer.from(JSON.stringify(claims({ name: 'Zoë €', esc: '\u0000' })), 'utf8'),
        ),
      ),
    OK,
  ],
]

const nested: Case[] = [
  [
    'a nested JWT (cty: JWT) whose payload is a signed token',
    async () => {
      const inner = await issuer.mint({}, { expiresInSeconds: 3600 })
      return bearer(signBytes(JSON.stringify({ ...header(), cty: 'JWT' }), inner))
    },
    INVALID_TOKEN,
  ],
  [
    'a nested JWT as a JSON string payload',
    async () => {
      const inner = await issuer.mint({}, { expiresInSeconds: 3600 })
      return bearer(signBytes(JSON.stringify({ ...header(), cty: 'JWT' }), JSON.stringify(inner)))
    },
    INVALID_TOKEN,
  ],
  [
    'an unsigned outer token around a signed inner one',
    async () => {
      const inner = await issuer.mint({}, { expiresInSeconds: 3600 })
      return bearer(`${b64({ alg: 'none', cty: 'JWT' })}.${b64(inner)}.`)
    },
    INVALID_TOKEN,
  ],
  [
    'a validly signed token whose claims carry another token',
    async () => {
      const inner = await issuer.mint({ aud: 'office' })
      // A claim of no meaning to the gate: it is data, never parsed as a token. (`act` has one,
      // RFC 8693's actor object: a string there is refused as actor_malformed, test/gate/actors.test.ts.)
      return bearer(
        signBytes(JSON.stringify(header()), JSON.stringify(claims({ original_token: inner }))),
      )
    },
    OK,
  ],
]

/** A validly signed token of exactly `length` characters (header padding fixes the rest). */
function tokenOfLength(length: number): string {
  const base = claims()
  const signatureLength = parts(valid)[2].length
  for (let headerPad = 0; headerPad < 4; headerPad++) {
    const headerSegment = b64({ ...header(), x: 'a'.repeat(headerPad) })
    const payloadLength = length - headerSegment.length - signatureLength - 2
    if (payloadLength % 4 === 1) continue
    const bytes = Math.floor((payloadLength * 3) / 4)
    const padLength = bytes - JSON.stringify({ ...base, pad: '' }).length
    const token = signSegments(headerSegment, b64({ ...base, pad: 'a'.repeat(padLength) }))
    if (token.length === length) return token
  }
  throw new Error(`no token of length ${length}`)
}

/** A validly signed token whose `which` segment is spelled with a non-canonical last character. */
function withAliasedSegment(which: 'header' | 'payload'): string {
  for (let pad = 0; pad < 4; pad++) {
    const headerSegment = b64({
      ...header(),
      ...(which === 'header' ? { x: 'a'.repeat(pad) } : {}),
    })
    const payloadSegment = b64(claims(which === 'payload' ? { x: 'a'.repeat(pad) } : {}))
    const target = which === 'header' ? headerSegment : payloadSegment
    const alias = aliasesOfLast(target)[0]
    if (alias === undefined) continue
    return which === 'header'
      ? signSegments(alias, payloadSegment)
      : signSegments(headerSegment, alias)
  }
  throw new Error('no alias found')
}

/** `segment` grown by 1 to 4 characters to a length base64url cannot have (4n+1). */
function impossibleLength(segment: string): string {
  const grow = (1 - (segment.length % 4) + 4) % 4 || 4
  return `${segment}${'A'.repeat(grow)}`
}

const sizes: Case[] = [
  [
    'a validly signed token of exactly 8192 bytes (the limit)',
    () => bearer(tokenOfLength(8192)),
    OK,
  ],
  ['a validly signed token of 8193 bytes', () => bearer(tokenOfLength(8193)), INVALID_TOKEN],
  ['a validly signed 12 KiB token', () => bearer(tokenOfLength(12_288)), INVALID_TOKEN],
  [
    'a validly signed token with deeply nested claims (2,000 levels)',
    () =>
      bearer(
        signBytes(
          JSON.stringify(header()),
          JSON.stringify(claims()).replace(/}$/, `,"deep":${'['.repeat(2000)}${']'.repeat(2000)}}`),
        ),
      ),
    OK,
  ],
  [
    'a validly signed token with 900 tiny claims (over the limit)',
    () => {
      const many: Json = {}
      for (let index = 0; index < 900; index++) many[`c${index}`] = 0
      return bearer(signBytes(JSON.stringify(header()), JSON.stringify(claims(many))))
    },
    INVALID_TOKEN,
  ],
  [
    'a validly signed token with 400 tiny claims (under the limit)',
    () => {
      const many: Json = {}
      for (let index = 0; index < 400; index++) many[`c${index}`] = 0
      return bearer(signBytes(JSON.stringify(header()), JSON.stringify(claims(many))))
    },
    OK,
  ],
]

describe.each([
  ['segment counts', segmentCounts],
  ['JWE and JSON serializations', serializations],
  ['non-canonical base64url', nonCanonical],
  ['header and payload that are not one JSON object', badJson],
  ['bytes that are not UTF-8', encoding],
  ['nested tokens', nested],
  ['token size', sizes],
] as const)('token syntax: %s', (_title, cases) => {
  it.each(cases)('%s', async (_name, probe, expected) => {
    await apps.expectAll(await probe(), expected)
  })
})

describe('token syntax details', () => {
  it('has a base64url alias for the signature that decodes to the same bytes (the case is real)', () => {
    const [, , signature] = parts(valid)
    for (const alias of aliasesOfLast(signature)) {
      expect(Buffer.from(alias, 'base64url').equals(Buffer.from(signature, 'base64url'))).toBe(true)
    }
    expect(aliasesOfLast(signature).length).toBeGreaterThan(0)
  })

  it('keeps the original token valid (the suite is testing syntax, not a broken key)', async () => {
    await apps.expectAll(bearer(valid), OK)
    expect(decode(parts(valid)[0])['kid']).toBe(kid)
    expect(KeyObject.from(issuer.privateKey(kid).key).type).toBe('private')
  })
})
