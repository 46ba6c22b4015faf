/**
 * `auth.tokenFor(target)` on a warm cache (issue 33): what a handler pays to call another product
 * on the user's behalf once the exchanged token is held. A gate with `delegation.exchange` admits a
 * user's gateway token from the development provider; the first `tokenFor('office')` exchanges it
 * there (token exchange, on loopback); then nothing but the cache is measured. Next to it:
 * `exchanger.exchange(token, 'office')` from outside a gate (it hashes the subject token and reads
 * its `exp` on every call), and `Promise.resolve()` of a string, the floor. Target: a few µs.
 */
import { pathToFileURL } from 'node:url'
import { isMain } from '../config.ts'
import { type MicroRow, newResult, type SuiteResult, writeResult } from '../results.ts'
import { isBuilt, loadClient, loadCore, paths } from '../tollgate.ts'
import { type Contender, measureCase } from './measure.ts'

export const TOKEN_FOR_WARM = 'tollgate auth.tokenFor(target) (warm cache)'
const EXCHANGE_WARM = 'tollgate exchanger.exchange(token, target) (warm cache)'
const FLOOR = 'Promise.resolve(token) (floor)'

interface DevProvider {
  url: string
  realm: string
  accessTokenFor(user: string, options: { clientId: string; resource: string }): Promise<string>
  close(): Promise<void>
}

interface Admission {
  tokenFor(target: string): Promise<string>
}

export async function runSuite(): Promise<SuiteResult<MicroRow>> {
  const result = newResult<MicroRow>('micro-token-exchange')
  if (!isBuilt()) {
    result.skipped.push({ what: TOKEN_FOR_WARM, why: 'dist/ is not built' })
    return result
  }
  const testing = (await import(pathToFileURL(paths.testing).href)) as {
    createDevProvider(options: object): Promise<DevProvider>
  }
  const GATEWAY = 'https://gateway.example.com'
  const OFFICE = 'https://office.example.com'
  const gatewayClient = { clientId: 'gateway', clientSecret: 'bench-only-secret' }
  const provider = await testing.createDevProvider({
    users: [{ sub: 'alice' }],
    resources: {
      [GATEWAY]: { audience: 'gateway', scopes: ['billing:read'] },
      [OFFICE]: { audience: 'office', scopes: ['office:records:read'] },
    },
    clients: [
      { clientId: 'web', clientSecret: 'bench-only-web-secret', audiences: [GATEWAY] },
      {
        ...gatewayClient,
        scopes: ['office:records:read'],
        exchange: { from: [GATEWAY], to: [OFFICE] },
      },
    ],
  })
  const core = (await loadCore()) as unknown as {
    keycloak(options: object): unknown
    createGate(options: object): {
      check(request: object): Promise<{ auth: Admission }>
      close(): Promise<void>
    }
  }
  const client = (await loadClient()) as unknown as {
    createTokenExchange(options: object): {
      exchange(token: string, target: string): Promise<string>
      close(): void
    }
  }
  const exchanger = client.createTokenExchange({
    issuer: core.keycloak({ authUrl: provider.url, realm: provider.realm }),
    ...gatewayClient,
  })
  const gate = core.createGate({
    issuers: core.keycloak({ authUrl: provider.url, realms: [provider.realm] }),
    audience: 'gateway',
    delegation: { exchange: exchanger },
  })
  try {
    const token = await provider.accessTokenFor('alice', { clientId: 'web', resource: GATEWAY })
    const { auth } = await gate.check({ headers: { authorization: `Bearer ${token}` } })
    const office = await auth.tokenFor('office')
    await exchanger.exchange(token, 'office')
    const contenders: Contender[] = [
      [TOKEN_FOR_WARM, () => auth.tokenFor('office')],
      [EXCHANGE_WARM, () => exchanger.exchange(token, 'office')],
      [FLOOR, () => Promise.resolve(office)],
    ]
    result.rows.push(...(await measureCase('tokenFor(), warm cache', contenders)))
  } finally {
    exchanger.close()
    await gate.close()
    await provider.close()
  }
  return result
}

if (isMain(import.meta.url)) {
  const result = await runSuite()
  console.log(`\nwritten ${writeResult(result)}`)
  process.exit(0)
}
