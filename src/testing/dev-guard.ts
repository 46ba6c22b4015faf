/**
 * What keeps the development provider a development tool: it refuses to start where
 * `NODE_ENV` is `production`, and answers only requests addressed to loopback by name.
 *
 * @module
 */

/**
 * `NODE_ENV` as the process has it, or `undefined` where there is no `process` (the provider
 * needs `node:http`, so that is never where it runs). The one place `tollgate` reads the
 * environment on its own: the development provider issues tokens to anyone who asks, and a
 * server that imports it by mistake (a leftover of a demo) must not start it in production. It
 * only ever refuses; it changes nothing else.
 */
function nodeEnvironment(): string | undefined {
  const process = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process
  return process?.env?.['NODE_ENV']
}

/**
 * @throws TypeError when `NODE_ENV` is `production` and `allowInProduction` is not set.
 */
export function refuseInProduction(allowInProduction: boolean): void {
  if (allowInProduction || nodeEnvironment() !== 'production') return
  throw new TypeError(
    'createDevProvider(options): NODE_ENV is "production": the development provider signs in anyone and issues tokens to every client it lists, so it does not start there. Remove it from production code, or set allowInProduction: true for a deployment that is a demo',
  )
}

/**
 * The `Host` values a request to the provider may carry: `127.0.0.1`, `localhost` or `[::1]`
 * with its port (without it on port 80, as browsers write it). Any other name means the request
 * was not addressed to this provider: a page on another site whose name resolves to 127.0.0.1
 * (DNS rebinding) reaches the port from the user's browser, with its own name in `Host`.
 */
export function loopbackHosts(port: number): ReadonlySet<string> {
  const hosts = new Set<string>()
  for (const name of ['127.0.0.1', 'localhost', '[::1]']) {
    hosts.add(`${name}:${port}`)
    if (port === 80) hosts.add(name)
  }
  return hosts
}
