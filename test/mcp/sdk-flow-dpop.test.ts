/**
 * The MCP authorization flow with DPoP-bound tokens (RFC 9449), end to end: the endpoints of
 * test/helpers/mcp-flow.ts (SDK 1.x and 2.x, on Express, Hono and a Fetch handler) behind gates with
 * `dpop: { mode: 'required' }`, and the SDK's client signing in at the development provider
 * (oidc-provider, whose DPoP support is on) with a DPoP key.
 *
 * SDK 2.x does DPoP itself (its OAuth provider's `dpop()`). SDK 1.x cannot: it sends every token
 * as `Bearer`, takes no proof into its token request and reads `Bearer` challenges only. On 1.x
 * the SDK still discovers and opens the authorization URLs; oauth4webapi redeems the code with a
 * proof and sends each request of the SDK's transport with the token as `DPoP` and a fresh proof
 * (test/helpers/mcp-clients.ts), and the step-up is asked with the SDK's own `auth()`.
 */
import { decodeJwt, decodeProtectedHeader } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { UNAUTHORIZED } from '../helpers/mcp-clients.js'
import { type McpFlows, SDK_FRAMEWORKS, signedIn, startMcpFlows } from '../helpers/mcp-flow.js'

let flows: McpFlows
/** Why each endpoint's gate refused, in order (the `rejected` events' reasons), by endpoint URL. */
const refusals = new Map<string, string[]>()

beforeAll(async () => {
  flows = await startMcpFlows({
    gate: (endpoint) => {
      const reasons: string[] = []
      refusals.set(endpoint.url, reasons)
      return {
        dpop: { mode: 'required', allowedHosts: [endpoint.host] },
        onEvent: (event) => {
          if (event.type === 'rejected') reasons.push(event.reason)
        },
      }
    },
  })
})
afterAll(() => flows?.close())

const ACCEPT = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' }

describe('DPoP-bound tokens (RFC 9449) with the SDK client', () => {
  describe.each(SDK_FRAMEWORKS)('%s', (flow, sdk) => {
    it('publishes bearer_methods_supported: [] and the proof algorithms, and challenges with DPoP only', async () => {
      const { url, metadataUrl } = flows.endpoint(flow)
      const metadata = await (await fetch(metadataUrl)).json()
      expect(metadata).toMatchObject({
        resource: url,
        authorization_servers: [flows.provider.issuer],
        // RFC 9728 §2: no bearer method is accepted, so none is listed.
        bearer_methods_supported: [],
        dpop_signing_alg_values_supported: ['ES256', 'EdDSA', 'PS256', 'RS256'],
        dpop_bound_access_tokens_required: true,
      })
      const refused = await fetch(url, { method: 'POST', headers: ACCEPT, body: '{}' })
      expect(refused.status).toBe(401)
      const challenge = refused.headers.get('www-authenticate') as string
      expect(challenge).toMatch(/^DPoP /)
      expect(challenge).not.toContain('Bearer')
      expect(challenge).toContain(`resource_metadata="${metadataUrl}"`)
    })

    it('signs in with a proof at the token endpoint, gets a token bound to its key, and sends a fresh proof with each request', async () => {
      const user = await signedIn(sdk, flows, flow, { dpop: true })
      const tokens = user.tokens()
      // RFC 6749 §7.1: the token type is case-insensitive (oauth4webapi lower-cases it).
      expect(tokens?.token_type?.toLowerCase()).toBe('dpop')
      const token = tokens?.access_token as string
      // RFC 9449 §6.1: the token is bound to the public key of the client's proofs.
      expect(decodeJwt(token).cnf).toEqual({ jkt: await user.dpopThumbprint })
      expect(JSON.parse(await user.callTool('whoami')).scopes).toEqual(['mcp:use'])

      const admitted = user.sent.filter((sent) => sent.status < 300)
      expect(admitted.length).toBeGreaterThanOrEqual(3) // initialize, initialized, the tool call
      const proofs = admitted.map((sent) => {
        expect(sent.headers.get('authorization')).toBe(`DPoP ${token}`)
        return sent.headers.get('dpop') as string
      })
      for (const proof of proofs) {
        expect(decodeProtectedHeader(proof).typ).toBe('dpop+jwt')
        expect(decodeJwt(proof).htu).toBe(flows.endpoint(flow).url)
      }
      expect(new Set(proofs.map((proof) => decodeJwt(proof).jti)).size).toBe(proofs.length)
    })

    it('refuses a replayed proof, and the bound token without its proof or as a bearer token', async () => {
      const { url } = flows.endpoint(flow)
      const user = await signedIn(sdk, flows, flow, { dpop: true })
      await user.callTool('whoami')
      const call = user.sent.findLast((sent) => sent.tool === 'whoami')
      expect(call?.status).toBe(200)
      const token = user.tokens()?.access_token as string
      const again = (headers: Headers) =>
        fetch(url, { method: 'POST', headers, body: call?.body ?? null })

      // RFC 9449 §11.1: the same request with the same proof, as a captured one would be replayed.
      const reasons = refusals.get(url) as string[]
      const before = reasons.length
      const replayed = await again(new Headers(call?.headers))
      expect(replayed.status).toBe(401)
      expect(replayed.headers.get('www-authenticate')).toContain('error="invalid_dpop_proof"')

      const withoutProof = new Headers(call?.headers)
      withoutProof.delete('dpop')
      expect((await again(withoutProof)).status).toBe(401)
      withoutProof.set('authorization', `Bearer ${token}`)
      const asBearer = await again(withoutProof)
      expect(asBearer.status).toBe(401)
      expect(asBearer.headers.get('www-authenticate')).toMatch(/^DPoP .*error="invalid_token"/)
      // Refused for the replay itself, then for the missing proof and the lost binding (§7.1).
      expect(reasons.slice(before)).toEqual(['dpop_replayed', 'dpop_proof', 'dpop_binding'])
    })

    it('is refused a tool outside its scopes with a DPoP challenge naming the scope, and steps up with the same key', async () => {
      const user = await signedIn(sdk, flows, flow, { dpop: true })
      const refused = await user.callTool('deploy').then(
        () => undefined,
        (error: unknown) => error,
      )
      const answer = user.sent.findLast((sent) => sent.tool === 'deploy')
      expect(answer?.status).toBe(403)
      expect(answer?.challenge).toMatch(/^DPoP /)
      expect(answer?.challenge).toContain('error="insufficient_scope"')
      expect(answer?.challenge).toContain('scope="mcp:use mcp:deploy"')
      if (sdk === '2.x') {
        // The SDK read the DPoP challenge and opened the authorization URL for its scope.
        expect(refused).toBeInstanceOf(UNAUTHORIZED[sdk])
      } else {
        // SDK 1.x reads Bearer challenges only: it gives up with the 403 (StreamableHTTPError),
        // and the step-up is asked with its auth() for the scope the challenge named.
        expect(refused).toMatchObject({ code: 403 })
        expect(user.authorizationUrls).toHaveLength(1)
        await user.requestScope('mcp:use mcp:deploy')
      }
      expect(user.authorizationUrls).toHaveLength(2)
      expect(user.authorizationUrls.at(-1)?.searchParams.get('scope')).toBe('mcp:use mcp:deploy')
      await user.authorize()
      const stepped = user.tokens()
      expect(stepped?.scope?.split(' ').sort()).toEqual(['mcp:deploy', 'mcp:use'])
      expect(decodeJwt(stepped?.access_token as string).cnf).toEqual({
        jkt: await user.dpopThumbprint,
      })
      expect(await user.callTool('deploy')).toBe('deployed')
    })
  })
})
