/**
 * Body parsers and the gate in Express, in both orders (docs/frameworks/express.md, "Body parsers
 * and the gate"). Parsers before the gate: an anonymous client's malformed body gets the parser's
 * 400 before any 401, and a token sent in a form body as well as in the header is refused (RFC
 * 6750 §2.2, §3.1: more than one method is `invalid_request`). The gate before the parsers, the
 * order the guide recommends: every request without a valid token gets the 401 and its challenge
 * before its body is read, and a form body's `access_token` is never read, so the request is
 * decided on the header alone.
 */
import type { Server } from 'node:http'
import { createServer } from 'node:http'

import express5 from 'express'
import express4 from 'express4'
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { tollgate } from '../../adapters/express/index.js'
import type { GateOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'

const PATH = '/orders'
const FORM = 'application/x-www-form-urlencoded'

let issuer: TestIssuer
let options: GateOptions
beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  options = { issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }), audience: 'gateway' }
})
afterAll(async () => {
  await issuer.close()
})

type Order = 'parsers first' | 'gate first'

function appWith(express: typeof express5, order: Order): Server {
  const app = express()
  const auth = tollgate(options)
  const parsers = [express.json(), express.urlencoded({ extended: false })]
  if (order === 'parsers first') app.use(...parsers, auth)
  else app.use(auth, ...parsers)
  app.post(PATH, (req, res) => {
    res.json({ subject: req.auth?.subject, body: req.body })
  })
  return createServer(app)
}

const EXPRESSES = [
  ['express 5', express5],
  ['express 4', express4 as unknown as typeof express5],
] as const

describe.each(EXPRESSES)('%s: body parsers before the gate', (_name, express) => {
  let app: Server
  beforeAll(() => {
    app = appWith(express, 'parsers first')
  })
  afterAll(() => {
    app.close()
  })

  it('answers an anonymous client’s malformed JSON with the parser’s 400, before any 401', async () => {
    const res = await request(app).post(PATH).set('Content-Type', 'application/json').send('{"a":')
    expect(res.status).toBe(400)
    expect(res.headers['www-authenticate']).toBeUndefined()
  })

  it('refuses a token sent in a form body as well as in the header: 400 invalid_request', async () => {
    const token = await issuer.mint({ sub: 'alice' })
    const res = await request(app)
      .post(PATH)
      .set('Authorization', `Bearer ${token}`)
      .set('Content-Type', FORM)
      .send(`access_token=${token}`)
    expect(res.status).toBe(400)
    expect(res.body).toEqual({
      error: 'invalid_request',
      error_description: 'access token sent more than one way',
    })
    expect(res.headers['www-authenticate']).toContain('error="invalid_request"')
  })
})

describe.each(EXPRESSES)('%s: the gate before the body parsers', (_name, express) => {
  let app: Server
  beforeAll(() => {
    app = appWith(express, 'gate first')
  })
  afterAll(() => {
    app.close()
  })

  it('answers an anonymous client with the 401 and its challenge, its malformed body unread', async () => {
    const res = await request(app).post(PATH).set('Content-Type', 'application/json').send('{"a":')
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toBe('Bearer realm="api"')
  })

  it('parses the body of an admitted request, and answers its malformed body with the parser’s 400', async () => {
    const token = await issuer.mint({ sub: 'alice' })
    const ok = await request(app)
      .post(PATH)
      .set('Authorization', `Bearer ${token}`)
      .send({ item: 'pen' })
    expect(ok.status).toBe(200)
    expect(ok.body).toEqual({ subject: 'alice', body: { item: 'pen' } })
    const malformed = await request(app)
      .post(PATH)
      .set('Authorization', `Bearer ${token}`)
      .set('Content-Type', 'application/json')
      .send('{"a":')
    expect(malformed.status).toBe(400)
  })

  it('decides on the header token alone when a form body carries access_token too: never read', async () => {
    const token = await issuer.mint({ sub: 'alice' })
    const other = await issuer.mint({ sub: 'mallory' })
    const res = await request(app)
      .post(PATH)
      .set('Authorization', `Bearer ${token}`)
      .set('Content-Type', FORM)
      .send(`access_token=${other}`)
    expect(res.status).toBe(200)
    expect(res.body.subject).toBe('alice')
    // A body token alone admits nothing: tollgate reads tokens from the header only.
    const bodyOnly = await request(app)
      .post(PATH)
      .set('Content-Type', FORM)
      .send(`access_token=${token}`)
    expect(bodyOnly.status).toBe(401)
  })
})
