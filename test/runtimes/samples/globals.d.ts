// The little of Bun's and Deno's globals that the runtime fixtures and the samples of
// docs/runtimes.md use: their full type packages are not dependencies of tollgate.
declare const Bun: {
  readonly env: Record<string, string | undefined>
  serve(options: {
    hostname?: string
    port: number
    fetch: (request: Request) => Response | Promise<Response>
  }): { readonly port: number }
}

declare const Deno: {
  readonly env: { get(name: string): string | undefined }
  serve(
    options: { hostname?: string; port: number; onListen?(address: { port: number }): void },
    handler: (request: Request) => Response | Promise<Response>,
  ): unknown
}
