/**
 * Drops one line a green run would otherwise print many times (issue 31): oidc-provider's notice
 * that a provider runs on its quick-start in-memory adapter, printed each time
 * test/helpers/oidc-provider.ts (the client and sign-in tests' provider) starts one. No user of
 * tollgate meets it: the development provider of tollgate/testing passes its own adapter
 * (src/testing/dev-store.ts), and test/testing/dev-provider-quiet.test.ts fails if it ever prints
 * it (its spy on `console` sees every call, this filter included). Only that notice is dropped,
 * at the call: vitest hands the reporter a test's console output in batches, so a filter there
 * would drop the lines printed beside it too.
 */

/** The start of oidc-provider v9's notice (lib/helpers/initialize_adapter.js). */
export const MEMORY_ADAPTER_NOTICE =
  'oidc-provider WARNING: a quick start development-only in-memory adapter is used'

const warn = console.warn
console.warn = function warnUnlessMemoryAdapterNotice(...args: unknown[]): void {
  const [first] = args
  if (typeof first === 'string' && first.includes(MEMORY_ADAPTER_NOTICE)) return
  warn.apply(console, args)
}
