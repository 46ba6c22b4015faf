/**
 * The part of oidc-provider's API the development provider uses, typed here because the package
 * ships no declarations and is an optional peer: `tollgate/testing`'s declarations must not name
 * it, so `createTestIssuer()` users need nothing installed.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'

/** oidc-provider's storage interface (its documented `adapter` configuration). */
export interface ProviderAdapter {
  upsert(id: string, payload: Record<string, unknown>, expiresIn?: number): Promise<void>
  find(id: string): Promise<Record<string, unknown> | undefined>
  findByUserCode(userCode: string): Promise<Record<string, unknown> | undefined>
  findByUid(uid: string): Promise<Record<string, unknown> | undefined>
  consume(id: string): Promise<void>
  destroy(id: string): Promise<void>
  revokeByGrantId(grantId: string): Promise<void>
}

export interface ProviderContext {
  oidc: {
    params?: Record<string, unknown>
    client?: { clientId: string }
  }
}

/** oidc-provider's view of one token request, as far as an extension grant reads it. */
export interface GrantContext {
  oidc: { params: Record<string, unknown>; client: { clientId: string } }
  body: unknown
}

export interface ProviderClient {
  clientId: string
  grantTypeAllowed(grantType: string): boolean
}

export interface ProviderToken {
  accountId?: string
  clientId?: string
}

export interface InteractionDetails {
  uid: string
  params: Record<string, unknown>
  prompt: { name: string }
}

export interface ProviderGrant {
  addOIDCScope(scope: string): void
  addResourceScope(resource: string, scope: string): void
  save(): Promise<string>
}

export interface ProviderInstance {
  Grant: new (init: { accountId: string; clientId: string }) => ProviderGrant
  proxy: boolean
  callback(): (req: IncomingMessage, res: ServerResponse) => void
  registerGrantType(
    name: string,
    handler: (ctx: GrantContext) => Promise<void>,
    params?: readonly string[],
    dupes?: readonly string[],
  ): void
  on(event: string, listener: (...args: unknown[]) => void): unknown
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>
  interactionFinished(
    req: IncomingMessage,
    res: ServerResponse,
    result: Record<string, unknown>,
    options?: { mergeWithLastSubmission?: boolean },
  ): Promise<void>
}

/** What a login check reads of the authorization request (oidc-provider's `ctx.oidc`). */
export interface PolicyContext {
  oidc: {
    params: Record<string, unknown>
    /** The session's `acr`. */
    acr: unknown
    result?: Record<string, unknown> | undefined
  }
}

/** A prompt check: `REQUEST_PROMPT` when the prompt must be shown. */
export interface PolicyCheckClass {
  new (
    reason: string,
    description: string,
    error: string,
    check: (ctx: PolicyContext) => boolean,
  ): object
  readonly REQUEST_PROMPT: boolean
  readonly NO_NEED_TO_PROMPT: boolean
}

export interface ProviderModule {
  default: new (issuer: string, configuration: Record<string, unknown>) => ProviderInstance
  interactionPolicy: {
    base(): { get(name: string): { checks: { add(check: object): void } } | undefined }
    Check: PolicyCheckClass
  }
  errors: {
    InvalidTarget: new (description?: string) => Error
    InvalidScope: new (description: string, scope: string) => Error
  }
}

/**
 * Loads oidc-provider. The specifier is a variable so that TypeScript does not look for its
 * (absent) declarations and the build does not need it installed.
 */
export async function loadOidcProvider(): Promise<ProviderModule> {
  const specifier = 'oidc-provider'
  try {
    return (await import(specifier)) as ProviderModule
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND') {
      throw new Error(
        'createDevProvider(): the development provider runs on oidc-provider, an optional peer dependency of tollgate; install it with `npm install --save-dev oidc-provider@^9`',
        { cause: error },
      )
    }
    throw error
  }
}
