/**
 * Fastify + @fastify/jwt + get-jwks, configured as get-jwks's README shows for @fastify/jwt: the
 * secret a function of the token's header (kid, alg) and issuer, keys cached by get-jwks; RS256
 * only, issuer and audience checked, `request.jwtVerify()` in an `onRequest` hook.
 */
import fastifyJwt, { type TokenOrHeader } from '@fastify/jwt'
import type { FastifyRequest } from 'fastify'
import buildGetJwks from 'get-jwks'
import { config, serve } from './common.ts'
import { fastifyServer } from './fastify-app.ts'

const { issuer, audience } = config()
// get-jwks finds the key set through the issuer's discovery document (`/.well-known/openid-configuration`).
const getJwks = buildGetJwks({ providerDiscovery: true, issuersWhitelist: [issuer] })

await serve(() =>
  fastifyServer(
    async (app) => {
      await app.register(fastifyJwt, {
        decode: { complete: true },
        secret: (_request: FastifyRequest, token: TokenOrHeader) => {
          const { header, payload } = token as {
            header: { kid: string; alg: string }
            payload: { iss: string }
          }
          return getJwks.getPublicKey({ kid: header.kid, alg: header.alg, domain: payload.iss })
        },
        verify: { algorithms: ['RS256'], allowedIss: issuer, allowedAud: audience },
      })
      app.addHook('onRequest', async (request) => {
        await request.jwtVerify()
      })
    },
    (request) => (request.user as { sub?: string } | undefined)?.sub,
  ),
)
