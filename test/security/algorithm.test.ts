/**
 * Attack class: signature and algorithm (RFC 8725 §2.1–2.3, §3.1). Tampered and stripped
 * signatures, `alg: none` in every casing, RS→HS key confusion with the public key in every
 * encoding an HMAC library might be handed, ECDSA psychic signatures (CVE-2022-21449) and
 * out-of-range values, Ed25519 malleability, algorithm/key-type mismatches and keys that are
 * published for encryption, too short, or inconsistent.
 */
import { createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto'

import { afterAll, beforeAll, describe, it } from 'vitest'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { bearer, type Case, INVALID_TOKEN, OK, useApps } from './helpers.js'
import {
  accessClaims,
  attackerKey,
  b64,
  compact,
  hmacToken,
  type Json,
  kidOf,
  parts,
  privateKeyOf,
  publicJwkOf,
  signInput,
  signWith,
} from './tokens.js'

// Order of the P-256 group and of the Ed25519 subgroup.
const P256_N = Buffer.from(
  'ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551',
  'hex',
)
const ED25519_L = 2n ** 252n + 27742317777372353535851937790883648493n

let issuer: TestIssuer
const kids: Record<'RS256' | 'ES256' | 'ES384' | 'EdDSA', string> = {
  RS256: '',
  ES256: '',
  ES384: '',
  EdDSA: '',
}
let valid: string

beforeAll(async () => {
  issuer = await createTestIssuer({
    realms: ['acme', 'keys'],
    algorithms: ['RS256', 'ES256', 'ES384', 'EdDSA'],
    audience: 'gateway',
  })
  for (const alg of Object.keys(kids) as (keyof typeof kids)[]) kids[alg] = await kidOf(issuer, alg)
  valid = await issuer.mint({}, { expiresInSeconds: 3600 })
  publishOddKeys()
})
afterAll(async () => {
  await issuer.close()
})

const apps = useApps(() => ({
  issuers: keycloak({ authUrl: issuer.url, realms: ['acme', 'keys'] }),
  audience: 'gateway',
}))

const claims = (overrides: Json = {}) => accessClaims(issuer, { exp: 4_102_444_800, ...overrides })
const privateKey = (alg: keyof typeof kids) => privateKeyOf(issuer, kids[alg])
const publicKey = (alg: keyof typeof kids): KeyObject =>
  createPublicKey({ key: publicJwkOf(issuer, kids[alg]) as never, format: 'jwk' })

/** `header.payload` of a fresh token and a signature over it of our choosing. */
function withSignature(alg: string, kid: string, signature: Buffer): string {
  return compact({ alg, typ: 'JWT', kid }, claims(), signature)
}

function es256Signature(): Buffer {
  const header = { alg: 'ES256', typ: 'JWT', kid: kids.ES256 }
  return signInput(privateKey('ES256'), 'ES256', `${b64(header)}.${b64(claims())}`)
}

/** A DER-encoded ECDSA signature of r and s. */
function der(r: Buffer, s: Buffer): Buffer {
  const integer = (value: Buffer) => {
    let bytes = value
    while (bytes.length > 1 && bytes[0] === 0 && (bytes[1] as number) < 0x80)
      bytes = bytes.subarray(1)
    if ((bytes[0] as number) >= 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes])
    return Buffer.concat([Buffer.from([0x02, bytes.length]), bytes])
  }
  const body = Buffer.concat([integer(r), integer(s)])
  return Buffer.concat([Buffer.from([0x30, body.length]), body])
}

const tampering: Case[] = [
  [
    'a payload changed after signing (sub)',
    () => {
      const [h, p, s] = parts(valid)
      const payload = JSON.parse(Buffer.from(p, 'base64url').toString()) as Json
      return bearer(`${h}.${b64({ ...payload, sub: 'admin' })}.${s}`)
    },
    INVALID_TOKEN,
  ],
  [
    'a payload changed after signing (aud widened to an array)',
    () => {
      const [h, p, s] = parts(valid)
      const payload = JSON.parse(Buffer.from(p, 'base64url').toString()) as Json
      return bearer(`${h}.${b64({ ...payload, aud: ['gateway', 'office'] })}.${s}`)
    },
    INVALID_TOKEN,
  ],
  [
    'a header changed after signing (typ dropped)',
    () => {
      const [, p, s] = parts(valid)
      return bearer(`${b64({ alg: 'RS256', kid: kids.RS256 })}.${p}.${s}`)
    },
    INVALID_TOKEN,
  ],
  [
    'a signature taken from another token',
    async () => {
      const other = await issuer.mint({ sub: 'someone-else' })
      const [h, p] = parts(valid)
      return bearer(`${h}.${p}.${parts(other)[2]}`)
    },
    INVALID_TOKEN,
  ],
  ['a stripped signature', () => bearer(`${parts(valid).slice(0, 2).join('.')}.`), INVALID_TOKEN],
  [
    'a signature one byte short',
    () => {
      const [h, p, s] = parts(valid)
      return bearer(`${h}.${p}.${Buffer.from(s, 'base64url').subarray(1).toString('base64url')}`)
    },
    INVALID_TOKEN,
  ],
  [
    'a signature one byte long',
    () => {
      const [h, p, s] = parts(valid)
      return bearer(
        `${h}.${p}.${Buffer.concat([Buffer.from(s, 'base64url'), Buffer.from([0])]).toString('base64url')}`,
      )
    },
    INVALID_TOKEN,
  ],
  [
    'a signature with one flipped bit',
    () => {
      const [h, p, s] = parts(valid)
      const bytes = Buffer.from(s, 'base64url')
      bytes[100] = (bytes[100] as number) ^ 0x01
      return bearer(`${h}.${p}.${bytes.toString('base64url')}`)
    },
    INVALID_TOKEN,
  ],
  [
    'an all-zero RSA signature of the right length',
    () => bearer(withSignature('RS256', kids.RS256, Buffer.alloc(256))),
    INVALID_TOKEN,
  ],
  [
    'an RSA signature equal to the modulus',
    () => {
      const n = Buffer.from(publicJwkOf(issuer, kids.RS256)['n'] as string, 'base64url')
      return bearer(withSignature('RS256', kids.RS256, n))
    },
    INVALID_TOKEN,
  ],
  [
    'an RSA signature of 1 (s^e = 1)',
    () => {
      const one = Buffer.alloc(256)
      one[255] = 1
      return bearer(withSignature('RS256', kids.RS256, one))
    },
    INVALID_TOKEN,
  ],
  [
    'a token signed by an untrusted key with the trusted kid',
    () =>
      bearer(
        signWith(
          attackerKey('rsa').privateKey,
          'RS256',
          { alg: 'RS256', kid: kids.RS256 },
          claims(),
        ),
      ),
    INVALID_TOKEN,
  ],
]

const NONE_SPELLINGS = ['none', 'None', 'NONE', 'nOnE', 'NoNe', 'none ', ' none', 'none\u0000']

const algNone: Case[] = NONE_SPELLINGS.flatMap((alg): Case[] => [
  [
    `alg ${JSON.stringify(alg)} with no signature`,
    () => bearer(compact({ alg, typ: 'JWT' }, claims())),
    INVALID_TOKEN,
  ],
  [
    `alg ${JSON.stringify(alg)} with the trusted kid and a real signature kept`,
    () => {
      const header = { alg, typ: 'JWT', kid: kids.RS256 }
      const payload = claims()
      const signature = signInput(privateKey('RS256'), 'RS256', `${b64(header)}.${b64(payload)}`)
      return bearer(compact(header, payload, signature))
    },
    INVALID_TOKEN,
  ],
])

const algShapes: Case[] = [
  [
    'no alg, validly signed',
    () => bearer(signWith(privateKey('RS256'), 'RS256', { kid: kids.RS256 }, claims())),
    INVALID_TOKEN,
  ],
  [
    'alg null, validly signed',
    () => bearer(signWith(privateKey('RS256'), 'RS256', { alg: null, kid: kids.RS256 }, claims())),
    INVALID_TOKEN,
  ],
  [
    'alg "", validly signed',
    () => bearer(signWith(privateKey('RS256'), 'RS256', { alg: '', kid: kids.RS256 }, claims())),
    INVALID_TOKEN,
  ],
  [
    'alg ["RS256"], validly signed',
    () =>
      bearer(signWith(privateKey('RS256'), 'RS256', { alg: ['RS256'], kid: kids.RS256 }, claims())),
    INVALID_TOKEN,
  ],
  [
    'alg {"name":"RS256"}, validly signed',
    () =>
      bearer(
        signWith(
          privateKey('RS256'),
          'RS256',
          { alg: { name: 'RS256' }, kid: kids.RS256 },
          claims(),
        ),
      ),
    INVALID_TOKEN,
  ],
  [
    'alg "rs256" (wrong case), validly signed',
    () =>
      bearer(signWith(privateKey('RS256'), 'RS256', { alg: 'rs256', kid: kids.RS256 }, claims())),
    INVALID_TOKEN,
  ],
  [
    'alg "RS256 " (trailing space), validly signed',
    () =>
      bearer(signWith(privateKey('RS256'), 'RS256', { alg: 'RS256 ', kid: kids.RS256 }, claims())),
    INVALID_TOKEN,
  ],
  [
    'alg "RSA-OAEP" (an encryption alg), validly signed',
    () =>
      bearer(
        signWith(privateKey('RS256'), 'RS256', { alg: 'RSA-OAEP', kid: kids.RS256 }, claims()),
      ),
    INVALID_TOKEN,
  ],
  [
    'alg "dir" (JWE), validly signed',
    () => bearer(signWith(privateKey('RS256'), 'RS256', { alg: 'dir', kid: kids.RS256 }, claims())),
    INVALID_TOKEN,
  ],
  [
    'alg "toString" (prototype name)',
    () =>
      bearer(
        signWith(privateKey('RS256'), 'RS256', { alg: 'toString', kid: kids.RS256 }, claims()),
      ),
    INVALID_TOKEN,
  ],
  [
    'alg "__proto__" (prototype name)',
    () =>
      bearer(
        signWith(privateKey('RS256'), 'RS256', { alg: '__proto__', kid: kids.RS256 }, claims()),
      ),
    INVALID_TOKEN,
  ],
]

/** Every encoding of the RSA public key that a careless HMAC verifier might use as its secret. */
function confusionSecrets(): Array<[string, Buffer | string]> {
  const key = publicKey('RS256')
  const jwk = publicJwkOf(issuer, kids.RS256)
  const spkiPem = key.export({ type: 'spki', format: 'pem' }) as string
  const pkcs1Pem = key.export({ type: 'pkcs1', format: 'pem' }) as string
  return [
    ['the SPKI PEM', spkiPem],
    ['the SPKI PEM without its final newline', spkiPem.trimEnd()],
    ['the SPKI PEM with CRLF line ends', spkiPem.replaceAll('\n', '\r\n')],
    ['the PKCS#1 PEM', pkcs1Pem],
    ['the SPKI DER bytes', key.export({ type: 'spki', format: 'der' })],
    ['the PKCS#1 DER bytes', key.export({ type: 'pkcs1', format: 'der' })],
    ['the published JWK as JSON', JSON.stringify(jwk)],
    ['the public JWK members as JSON', JSON.stringify(key.export({ format: 'jwk' }))],
    ['the modulus bytes', Buffer.from(jwk['n'] as string, 'base64url')],
    ['the modulus as base64url text', jwk['n'] as string],
    ['the whole JWKS document', JSON.stringify(issuer.jwks('acme'))],
    ['the kid', kids.RS256],
    ['an empty secret', ''],
  ]
}

const SECRET_NAMES = [
  'the SPKI PEM',
  'the SPKI PEM without its final newline',
  'the SPKI PEM with CRLF line ends',
  'the PKCS#1 PEM',
  'the SPKI DER bytes',
  'the PKCS#1 DER bytes',
  'the published JWK as JSON',
  'the public JWK members as JSON',
  'the modulus bytes',
  'the modulus as base64url text',
  'the whole JWKS document',
  'the kid',
  'an empty secret',
]

const keyConfusion: Case[] = [
  ...['HS256', 'HS384', 'HS512'].flatMap((alg): Case[] =>
    SECRET_NAMES.filter(
      (name) =>
        alg === 'HS256' || name.startsWith('the SPKI PEM') || name === 'the published JWK as JSON',
    ).map(
      (name): Case => [
        `${alg} keyed with ${name} of the RSA key`,
        () => {
          const secret = confusionSecrets().find(([label]) => label === name)?.[1] ?? ''
          const hash = `sha${alg.slice(2)}` as 'sha256'
          return bearer(hmacToken({ alg, typ: 'JWT', kid: kids.RS256 }, claims(), secret, hash))
        },
        INVALID_TOKEN,
      ],
    ),
  ),
  [
    'HS256 keyed with the SPKI PEM of the EC key',
    () => {
      const pem = publicKey('ES256').export({ type: 'spki', format: 'pem' }) as string
      return bearer(hmacToken({ alg: 'HS256', typ: 'JWT', kid: kids.ES256 }, claims(), pem))
    },
    INVALID_TOKEN,
  ],
  [
    'HS256 keyed with the RSA SPKI PEM and no kid',
    () => {
      const pem = publicKey('RS256').export({ type: 'spki', format: 'pem' }) as string
      return bearer(hmacToken({ alg: 'HS256', typ: 'JWT' }, claims(), pem))
    },
    INVALID_TOKEN,
  ],
]

const ecdsaEdges: Case[] = [
  [
    'ES256 with r = s = 0 (psychic signature)',
    () => bearer(withSignature('ES256', kids.ES256, Buffer.alloc(64))),
    INVALID_TOKEN,
  ],
  [
    'ES256 with r = s = 0, no kid',
    () => bearer(compact({ alg: 'ES256', typ: 'JWT' }, claims(), Buffer.alloc(64))),
    INVALID_TOKEN,
  ],
  [
    'ES256 with r = s = n',
    () => bearer(withSignature('ES256', kids.ES256, Buffer.concat([P256_N, P256_N]))),
    INVALID_TOKEN,
  ],
  [
    'ES256 with r = n, s = 1',
    () => {
      const one = Buffer.alloc(32)
      one[31] = 1
      return bearer(withSignature('ES256', kids.ES256, Buffer.concat([P256_N, one])))
    },
    INVALID_TOKEN,
  ],
  [
    'ES256 with r = 1, s = n',
    () => {
      const one = Buffer.alloc(32)
      one[31] = 1
      return bearer(withSignature('ES256', kids.ES256, Buffer.concat([one, P256_N])))
    },
    INVALID_TOKEN,
  ],
  [
    'ES256 with r = s = 2^256 − 1',
    () => bearer(withSignature('ES256', kids.ES256, Buffer.alloc(64, 0xff))),
    INVALID_TOKEN,
  ],
  [
    'ES256 with a valid r and s = 0',
    () => {
      const header = { alg: 'ES256', typ: 'JWT', kid: kids.ES256 }
      const payload = claims()
      const signature = signInput(privateKey('ES256'), 'ES256', `${b64(header)}.${b64(payload)}`)
      return bearer(
        compact(header, payload, Buffer.concat([signature.subarray(0, 32), Buffer.alloc(32)])),
      )
    },
    INVALID_TOKEN,
  ],
  [
    'ES256 with a valid signature in DER instead of r||s',
    () => {
      const header = { alg: 'ES256', typ: 'JWT', kid: kids.ES256 }
      const payload = claims()
      const signature = signInput(privateKey('ES256'), 'ES256', `${b64(header)}.${b64(payload)}`)
      return bearer(
        compact(header, payload, der(signature.subarray(0, 32), signature.subarray(32))),
      )
    },
    INVALID_TOKEN,
  ],
  [
    'ES256 with a valid signature and one extra byte',
    () => {
      const header = { alg: 'ES256', typ: 'JWT', kid: kids.ES256 }
      const payload = claims()
      const signature = signInput(privateKey('ES256'), 'ES256', `${b64(header)}.${b64(payload)}`)
      return bearer(compact(header, payload, Buffer.concat([signature, Buffer.from([0])])))
    },
    INVALID_TOKEN,
  ],
  [
    'ES256 with a valid signature missing its last byte',
    () => {
      const header = { alg: 'ES256', typ: 'JWT', kid: kids.ES256 }
      const payload = claims()
      const signature = signInput(privateKey('ES256'), 'ES256', `${b64(header)}.${b64(payload)}`)
      return bearer(compact(header, payload, signature.subarray(0, 63)))
    },
    INVALID_TOKEN,
  ],
  [
    'ES256 with the signature of another message',
    () => bearer(withSignature('ES256', kids.ES256, es256Signature())),
    INVALID_TOKEN,
  ],
  [
    'a valid ES256 token (control)',
    () =>
      bearer(
        signWith(
          privateKey('ES256'),
          'ES256',
          { alg: 'ES256', typ: 'JWT', kid: kids.ES256 },
          claims(),
        ),
      ),
    OK,
  ],
]

const eddsaEdges: Case[] = [
  [
    'EdDSA with an all-zero signature',
    () => bearer(withSignature('EdDSA', kids.EdDSA, Buffer.alloc(64))),
    INVALID_TOKEN,
  ],
  [
    'EdDSA with S + L (malleated, non-canonical S)',
    () => {
      const header = { alg: 'EdDSA', typ: 'JWT', kid: kids.EdDSA }
      const payload = claims()
      const signature = signInput(privateKey('EdDSA'), 'EdDSA', `${b64(header)}.${b64(payload)}`)
      const s =
        BigInt(`0x${Buffer.from(signature.subarray(32)).reverse().toString('hex')}`) + ED25519_L
      const malleated = Buffer.from(s.toString(16).padStart(64, '0'), 'hex').reverse()
      return bearer(compact(header, payload, Buffer.concat([signature.subarray(0, 32), malleated])))
    },
    INVALID_TOKEN,
  ],
  [
    'EdDSA with a 63-byte signature',
    () => bearer(withSignature('EdDSA', kids.EdDSA, Buffer.alloc(63, 1))),
    INVALID_TOKEN,
  ],
  [
    'a valid EdDSA token (control)',
    () =>
      bearer(
        signWith(
          privateKey('EdDSA'),
          'EdDSA',
          { alg: 'EdDSA', typ: 'JWT', kid: kids.EdDSA },
          claims(),
        ),
      ),
    OK,
  ],
  [
    'alg "Ed25519" (fully-specified name, not on the allow-list)',
    () =>
      bearer(
        signWith(
          privateKey('EdDSA'),
          'EdDSA',
          { alg: 'Ed25519', typ: 'JWT', kid: kids.EdDSA },
          claims(),
        ),
      ),
    INVALID_TOKEN,
  ],
]

const mismatch: Case[] = [
  [
    'header ES256 on the RSA kid, signed with RSA',
    () =>
      bearer(signWith(privateKey('RS256'), 'RS256', { alg: 'ES256', kid: kids.RS256 }, claims())),
    INVALID_TOKEN,
  ],
  [
    'header RS256 on the EC kid, signed with ECDSA',
    () =>
      bearer(signWith(privateKey('ES256'), 'ES256', { alg: 'RS256', kid: kids.ES256 }, claims())),
    INVALID_TOKEN,
  ],
  [
    'header PS256 on an RSA key published with alg RS256, PSS-signed by that key',
    () =>
      bearer(signWith(privateKey('RS256'), 'PS256', { alg: 'PS256', kid: kids.RS256 }, claims())),
    INVALID_TOKEN,
  ],
  [
    'header RS384 (not allowed) on the RSA kid, signed RS384',
    () =>
      bearer(signWith(privateKey('RS256'), 'RS384', { alg: 'RS384', kid: kids.RS256 }, claims())),
    INVALID_TOKEN,
  ],
  [
    'header ES384 on the ES384 kid (published, not on the allow-list)',
    () =>
      bearer(signWith(privateKey('ES384'), 'ES384', { alg: 'ES384', kid: kids.ES384 }, claims())),
    INVALID_TOKEN,
  ],
  [
    'header ES256 on the ES384 kid, signed with the P-384 key',
    () =>
      bearer(signWith(privateKey('ES384'), 'ES384', { alg: 'ES256', kid: kids.ES384 }, claims())),
    INVALID_TOKEN,
  ],
  [
    'header EdDSA on the RSA kid',
    () =>
      bearer(signWith(privateKey('RS256'), 'RS256', { alg: 'EdDSA', kid: kids.RS256 }, claims())),
    INVALID_TOKEN,
  ],
  [
    'header RS256 on the Ed25519 kid, signed with Ed25519',
    () =>
      bearer(signWith(privateKey('EdDSA'), 'EdDSA', { alg: 'RS256', kid: kids.EdDSA }, claims())),
    INVALID_TOKEN,
  ],
  [
    'header ES256 without kid, signed with RSA',
    () => bearer(signWith(privateKey('RS256'), 'RS256', { alg: 'ES256' }, claims())),
    INVALID_TOKEN,
  ],
  [
    'header RS256 without kid, signed by the trusted RSA key (control)',
    () => bearer(signWith(privateKey('RS256'), 'RS256', { alg: 'RS256' }, claims())),
    OK,
  ],
]

// Keys published in realm "keys" that must never verify anything, and one control.
const odd = {
  encUse: attackerKey('rsa'),
  encOps: attackerKey('rsa'),
  stringOps: attackerKey('rsa'),
  oaepAlg: attackerKey('rsa'),
  wrongCurve: attackerKey('ec'),
  verifyOps: attackerKey('rsa'),
}
const shortKey = generateKeyPairSync('rsa', { modulusLength: 1024 })

function publishOddKeys(): void {
  const jwk = (key: KeyObject, extra: Json): Json => ({
    ...(key.export({ format: 'jwk' }) as Json),
    ...extra,
  })
  issuer.overrideJwks(
    {
      keys: [
        jwk(odd.encUse.publicKey, { kid: 'enc-use', use: 'enc', alg: 'RS256' }),
        jwk(odd.encOps.publicKey, { kid: 'enc-ops', key_ops: ['encrypt', 'wrapKey'] }),
        jwk(odd.stringOps.publicKey, { kid: 'string-ops', key_ops: 'verify' }),
        jwk(odd.oaepAlg.publicKey, { kid: 'oaep', use: 'sig', alg: 'RSA-OAEP' }),
        jwk(odd.wrongCurve.publicKey, { kid: 'wrong-curve', alg: 'ES384', use: 'sig' }),
        jwk(shortKey.publicKey, { kid: 'short', use: 'sig', alg: 'RS256' }),
        jwk(odd.verifyOps.publicKey, { kid: 'verify-ops', key_ops: ['verify'], alg: 'RS256' }),
      ],
    },
    { realm: 'keys' },
  )
}

const keysClaims = () => accessClaims(issuer, { exp: 4_102_444_800 }, 'keys')

const publishedKeys: Case[] = [
  [
    'a key published with use "enc"',
    () =>
      bearer(
        signWith(odd.encUse.privateKey, 'RS256', { alg: 'RS256', kid: 'enc-use' }, keysClaims()),
      ),
    INVALID_TOKEN,
  ],
  [
    'a key whose key_ops allow only encrypt/wrapKey',
    () =>
      bearer(
        signWith(odd.encOps.privateKey, 'RS256', { alg: 'RS256', kid: 'enc-ops' }, keysClaims()),
      ),
    INVALID_TOKEN,
  ],
  [
    'a key whose key_ops is a string, not an array',
    () =>
      bearer(
        signWith(
          odd.stringOps.privateKey,
          'RS256',
          { alg: 'RS256', kid: 'string-ops' },
          keysClaims(),
        ),
      ),
    INVALID_TOKEN,
  ],
  [
    'a key published with alg RSA-OAEP',
    () =>
      bearer(
        signWith(odd.oaepAlg.privateKey, 'RS256', { alg: 'RS256', kid: 'oaep' }, keysClaims()),
      ),
    INVALID_TOKEN,
  ],
  [
    'a P-256 key labelled ES384, used as ES256',
    () =>
      bearer(
        signWith(
          odd.wrongCurve.privateKey,
          'ES256',
          { alg: 'ES256', kid: 'wrong-curve' },
          keysClaims(),
        ),
      ),
    INVALID_TOKEN,
  ],
  [
    'a 1024-bit RSA key',
    () =>
      bearer(signWith(shortKey.privateKey, 'RS256', { alg: 'RS256', kid: 'short' }, keysClaims())),
    INVALID_TOKEN,
  ],
  [
    'a key with key_ops ["verify"] (control)',
    () =>
      bearer(
        signWith(
          odd.verifyOps.privateKey,
          'RS256',
          { alg: 'RS256', kid: 'verify-ops' },
          keysClaims(),
        ),
      ),
    OK,
  ],
]

describe.each([
  ['tampered and stripped signatures', tampering],
  ['alg none in every casing', algNone],
  ['alg values that are not an allowed algorithm name', algShapes],
  ['RS→HS key confusion', keyConfusion],
  ['ECDSA edge values (CVE-2022-21449)', ecdsaEdges],
  ['Ed25519 edge values', eddsaEdges],
  ['algorithm and key type mismatch', mismatch],
  ['keys meant for encryption, too short or inconsistent', publishedKeys],
] as const)('signature and algorithm: %s', (_title, cases) => {
  it.each(cases)('%s', async (_name, probe, expected) => {
    await apps.expectAll(await probe(), expected)
  })
})
