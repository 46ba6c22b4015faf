/**
 * The MCP authorization flow end to end, once for each MCP TypeScript SDK major and framework:
 * the endpoints (test/helpers/mcp-servers.ts) behind tollgate, the development provider that
 * signs their users in, and the SDK's client (test/helpers/mcp-clients.ts) of one of them.
 */
import { expect, onTestFinished } from 'vitest'
import type { GateOptions } from '../../src/gate/options.js'
import {
  createDevProvider,
  type DevProvider,
  type DevProviderOptions,
  type DevResource,
} from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { type McpUser, mcpClient, mcpUser, UNAUTHORIZED } from './mcp-clients.js'
import { type McpFramework, type McpHost, mcpApp, mcpHost, type SdkVersion } from './mcp-servers.js'

/** Each SDK major on each framework both it and `mcpGate` serve: a `describe.each` table. */
export const SDK_FRAMEWORKS = [
  ['SDK 1.x on Express', '1.x', 'Express'],
  ['SDK 1.x on Hono', '1.x', 'Hono'],
  ['SDK 1.x on a Fetch handler', '1.x', 'Fetch'],
  ['SDK 2.x on Express', '2.x', 'Express'],
  ['SDK 2.x on Hono', '2.x', 'Hono'],
  ['SDK 2.x on a Fetch handler', '2.x', 'Fetch'],
] as const satisfies readonly (readonly [string, SdkVersion, McpFramework])[]

export type FlowName = (typeof SDK_FRAMEWORKS)[number][0]

/** The scopes of every endpoint: `mcp:use` for all it serves, `mcp:deploy` for the deploy tool. */
export const MCP_SCOPES = ['mcp:use', 'mcp:deploy']

/** One endpoint of a flow: where it is, and its RFC 9728 metadata URL (§3.1: the path appended). */
export interface McpEndpoint extends McpHost {
  readonly metadataUrl: string
}

export interface McpFlows {
  readonly provider: DevProvider
  /** The endpoint of a flow of {@link SDK_FRAMEWORKS}. */
  endpoint(flow: FlowName): McpEndpoint
  close(): Promise<void>
}

export interface McpFlowsOptions {
  /** How each endpoint's resource is registered at the provider, beyond its scopes. */
  readonly resource?: Omit<DevResource, 'scopes'>
  /** Other resources and clients of the provider. */
  readonly resources?: DevProviderOptions['resources']
  readonly clients?: DevProviderOptions['clients']
  /** The gate in front of `endpoint`, beyond the issuer, the audience and the metadata. */
  readonly gate?: (endpoint: McpEndpoint) => Partial<GateOptions>
  /** The issuer entries of the gate; default the provider's realm as `keycloak()` gives it. */
  readonly issuers?: (provider: DevProvider) => GateOptions['issuers']
}

/**
 * Starts the endpoints of {@link SDK_FRAMEWORKS} and the development provider (user `alice`,
 * signed in at every authorization request; the client of `mcpClient()`), each endpoint behind a
 * gate whose audience and metadata `resource` are its own URL.
 */
export async function startMcpFlows(options: McpFlowsOptions = {}): Promise<McpFlows> {
  const endpoints = new Map<FlowName, McpEndpoint>()
  for (const [name] of SDK_FRAMEWORKS) {
    const host = await mcpHost()
    endpoints.set(name, {
      ...host,
      metadataUrl: `http://${host.host}/.well-known/oauth-protected-resource/mcp`,
    })
  }
  const provider = await createDevProvider({
    users: [{ sub: 'alice', name: 'Alice' }],
    autoLogin: 'alice',
    resources: {
      ...Object.fromEntries(
        [...endpoints.values()].map((endpoint) => [
          endpoint.url,
          { ...options.resource, scopes: MCP_SCOPES },
        ]),
      ),
      ...options.resources,
    },
    clients: [mcpClient(), ...(options.clients ?? [])],
  })
  for (const [name, sdk, framework] of SDK_FRAMEWORKS) {
    const endpoint = endpoints.get(name) as McpEndpoint
    endpoint.serve(
      mcpApp(sdk, framework, {
        issuers:
          options.issuers?.(provider) ??
          keycloak({ authUrl: provider.url, realms: [provider.realm] }),
        audience: endpoint.url,
        resourceMetadata: { resource: endpoint.url },
        ...options.gate?.(endpoint),
      }),
    )
  }
  return {
    provider,
    endpoint: (flow) => endpoints.get(flow) as McpEndpoint,
    async close() {
      for (const endpoint of endpoints.values()) await endpoint.close()
      await provider.close()
    },
  }
}

/** A user of the `sdk` client of `endpoint`, signed in; the client is closed when the test ends. */
export async function signedIn(
  sdk: SdkVersion,
  flows: McpFlows,
  flow: FlowName,
  options: { readonly dpop?: boolean } = {},
): Promise<McpUser> {
  const user = mcpUser(sdk, { url: flows.endpoint(flow).url, provider: flows.provider, ...options })
  onTestFinished(() => user.close())
  await user.signIn()
  return user
}

/**
 * The step-up of MCP 2025-11-25 ("Scope Challenge Handling") as the SDK does it: `deploy` is
 * refused with 403, the SDK opens an authorization URL for the scopes the challenge names, the
 * user signs in, and the call is made again with the new token.
 */
export async function expectStepUpToDeploy(sdk: SdkVersion, user: McpUser): Promise<void> {
  const opened = user.authorizationUrls.length
  await expect(user.callTool('deploy')).rejects.toBeInstanceOf(UNAUTHORIZED[sdk])
  expect(user.sent.findLast((sent) => sent.tool === 'deploy')?.status).toBe(403)
  expect(user.authorizationUrls).toHaveLength(opened + 1)
  expect(user.authorizationUrls.at(-1)?.searchParams.get('scope')).toBe('mcp:use mcp:deploy')
  await user.authorize()
  expect(user.tokens()?.scope?.split(' ').sort()).toEqual(['mcp:deploy', 'mcp:use'])
  expect(await user.callTool('deploy')).toBe('deployed')
}
