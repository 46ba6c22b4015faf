/** docs/mtls.md. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { expect } from 'vitest'

import { clientCertField, makeCertificate, send } from '../../helpers/tls.js'
import { answer, bearer, eventually, type ScenarioTable } from '../scenario.js'

const BILLING = '/api/v1/billing/subscriptions'

export const MTLS: ScenarioTable = {
  'docs/mtls.md': {
    "On Node's TLS": {
      promises:
        "over TLS: a token bound to alice's certificate 200 with alice's certificate, 401 with mallory's and with none; an unbound token 200 without a certificate",
      async run({ start, world: { kit } }) {
        const server = makeCertificate('api.test', '127.0.0.1')
        const alice = makeCertificate('alice')
        const mallory = makeCertificate('mallory')
        const dir = mkdtempSync(join(tmpdir(), 'tollgate-mtls-sample-'))
        try {
          writeFileSync(join(dir, 'cert.pem'), server.cert)
          writeFileSync(join(dir, 'key.pem'), server.key)
          const api = await start({
            env: { TLS_CERT_FILE: join(dir, 'cert.pem'), TLS_KEY_FILE: join(dir, 'key.pem') },
            until: 'none',
          })
          const token = await kit.mint({ sub: 'alice' }, { certificate: alice.cert })
          const over = (authorization: string, client?: typeof alice) =>
            send({ port: api.port, path: BILLING, headers: { authorization }, ca: server, client })
          const admitted = await eventually(
            'the HTTPS server answering',
            () => over(`Bearer ${token}`, alice).catch(() => undefined),
            (reply) => reply !== undefined,
          )
          expect(admitted?.status).toBe(200)
          expect(JSON.parse(admitted?.body ?? '')).toEqual({ user: 'alice' })
          const stolen = await over(`Bearer ${token}`, mallory)
          expect(stolen.status).toBe(401)
          expect(stolen.headers['www-authenticate']).toContain('error="invalid_token"')
          expect((await over(`Bearer ${token}`)).status).toBe(401)
          expect((await over(`Bearer ${await kit.mint()}`)).status).toBe(200)
        } finally {
          rmSync(dir, { recursive: true, force: true })
        }
      },
    },

    'Behind a proxy that terminates TLS': {
      promises:
        "from 127.0.0.1 (a listed proxy): a bound token with its certificate's Client-Cert 200; another certificate, no field, nginx's URL-encoded PEM, and an unbound token (mode required) 401",
      async run({ start, world: { kit } }) {
        const alice = makeCertificate('alice')
        const mallory = makeCertificate('mallory')
        const api = await start()
        const token = await kit.mint({ sub: 'alice' }, { certificate: alice.x509 })
        const withField = (field: string) => bearer(token, { 'client-cert': field })
        expect(await answer(await api.fetch(BILLING, withField(clientCertField(alice))))).toEqual({
          status: 200,
          body: { user: 'alice' },
        })
        expect((await api.fetch(BILLING, withField(clientCertField(mallory)))).status).toBe(401)
        expect((await api.fetch(BILLING, bearer(token))).status).toBe(401)
        expect((await api.fetch(BILLING, withField(encodeURIComponent(alice.cert)))).status).toBe(
          401,
        )
        const unbound = bearer(await kit.mint(), { 'client-cert': clientCertField(alice) })
        expect((await api.fetch(BILLING, unbound)).status).toBe(401)
      },
    },

    'Fetch handlers, Hono, Bun, Deno': {
      promises:
        "the Fetch adapter told of the socket: a bound token with its certificate's Client-Cert from 127.0.0.1 200, with another certificate 401; an unbound token 200",
      async run({ start, world: { kit } }) {
        const alice = makeCertificate('alice')
        const mallory = makeCertificate('mallory')
        const api = await start()
        const token = await kit.mint({ sub: 'alice' }, { certificate: alice.cert })
        expect(
          await answer(
            await api.fetch('/', bearer(token, { 'client-cert': clientCertField(alice) })),
          ),
        ).toEqual({ status: 200, body: { user: 'alice' } })
        const other = bearer(token, { 'client-cert': clientCertField(mallory) })
        expect((await api.fetch('/', other)).status).toBe(401)
        expect(await answer(await api.fetch('/', bearer(await kit.mint())))).toEqual({
          status: 200,
          body: { user: 'user-1' },
        })
      },
    },
  },
}
