// oidc-provider ships no type declarations; this is the part of its API the test provider uses.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http'

  export type ClientMetadata = Record<string, unknown> & { client_id: string }

  export interface KoaContextWithOIDC {
    oidc: {
      params?: Record<string, unknown>
      client?: { clientId: string }
    }
  }

  export interface OIDCClient {
    clientId: string
    grantTypeAllowed(grantType: string): boolean
  }

  export interface InteractionDetails {
    uid: string
    params: Record<string, unknown>
  }

  export interface Configuration {
    clients?: ClientMetadata[]
    jwks?: { keys: unknown[] }
    routes?: Record<string, string>
    scopes?: string[]
    features?: Record<string, unknown>
    interactions?: { url(ctx: unknown, interaction: InteractionDetails): string }
    findAccount?: (
      ctx: unknown,
      sub: string,
    ) => Promise<{ accountId: string; claims(): Promise<Record<string, unknown>> }>
    issueRefreshToken?: (ctx: unknown, client: OIDCClient) => Promise<boolean>
    rotateRefreshToken?: boolean
    pkce?: { required(): boolean }
    ttl?: Record<string, number | ((...args: unknown[]) => number)>
    [key: string]: unknown
  }

  class Grant {
    constructor(init: { accountId: string; clientId: string })
    addOIDCScope(scope: string): void
    addResourceScope(resource: string, scope: string): void
    save(): Promise<string>
  }

  export const errors: { InvalidTarget: new (description?: string) => Error }

  export default class Provider {
    constructor(issuer: string, configuration: Configuration)
    Grant: typeof Grant
    callback(): (req: IncomingMessage, res: ServerResponse) => Promise<void>
    on(event: 'grant.success', listener: (ctx: KoaContextWithOIDC) => void): this
    on(event: 'grant.error', listener: (ctx: KoaContextWithOIDC, error: unknown) => void): this
    on(event: string, listener: (...args: unknown[]) => void): this
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>
    interactionFinished(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<void>
  }
}
