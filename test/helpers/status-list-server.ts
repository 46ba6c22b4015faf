/**
 * A Token Status List provider on loopback for the gate's status tests: serves, at any path, a
 * Status List Token (`application/statuslist+jwt`) signed by the test issuer's realm key, whose
 * statuses, claims and header the test sets, counts fetches per path, and misbehaves on request
 * (hang, redirect, a status code, a body of any size or an endless one).
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

import { encodeStatusList, type StatusBits } from '../../src/status/bits.js'
import type { TestIssuer } from '../../src/testing/index.js'

export type ListFault =
  | { readonly kind: 'hang' }
  | { readonly kind: 'redirect'; readonly to: string }
  | { readonly kind: 'status'; readonly status: number }
  | { readonly kind: 'body'; readonly body: string }
  | { readonly kind: 'endless' }

export interface StatusListServer {
  /** `http://127.0.0.1:PORT/` */
  readonly origin: string
  /** The URL of the list at `path` (default `/lists/1`). */
  uri(path?: string): string
  /** Sets the statuses of the list at `path`. */
  setStatuses(statuses: readonly number[], options?: { bits?: StatusBits; path?: string }): void
  /** Sets one status. */
  setStatus(index: number, value: number, path?: string): void
  /** Claims added to (or, with `undefined`, removed from) every list token from now on. */
  claims: Record<string, unknown>
  /** Header members added to every list token. */
  header: Record<string, unknown>
  /** Signs lists with another realm of the issuer (another key set). */
  realm: string | undefined
  fault: ListFault | undefined
  /** Fetches per path. */
  readonly fetches: Map<string, number>
  /** The `Accept` header of the last fetch. */
  lastAccept: string | undefined
  close(): Promise<void>
}

export async function startStatusListServer(issuer: TestIssuer): Promise<StatusListServer> {
  const lists = new Map<string, { statuses: number[]; bits: StatusBits }>()
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] as string
    state.fetches.set(path, (state.fetches.get(path) ?? 0) + 1)
    state.lastAccept = req.headers.accept
    const fault = state.fault
    if (fault?.kind === 'hang') return
    if (fault?.kind === 'redirect') {
      res.writeHead(302, { location: fault.to }).end()
      return
    }
    if (fault?.kind === 'status') {
      res.writeHead(fault.status).end()
      return
    }
    if (fault?.kind === 'body') {
      res.writeHead(200, { 'content-type': 'application/statuslist+jwt' }).end(fault.body)
      return
    }
    if (fault?.kind === 'endless') {
      res.writeHead(200, { 'content-type': 'application/statuslist+jwt' })
      const chunk = 'A'.repeat(64 * 1024)
      const pump = () => {
        while (res.write(chunk)) {
          if (res.destroyed) return
        }
        res.once('drain', pump)
      }
      res.on('close', () => res.removeAllListeners('drain'))
      pump()
      return
    }
    const list = lists.get(path)
    if (list === undefined) {
      res.writeHead(404).end()
      return
    }
    const now = Math.floor(Date.now() / 1000)
    const payload: Record<string, unknown> = {
      sub: `${state.origin.slice(0, -1)}${path}`,
      iat: now,
      exp: now + 3600,
      ttl: 300,
      status_list: { bits: list.bits, lst: encodeStatusList(list.statuses, list.bits) },
    }
    for (const [name, value] of Object.entries(state.claims)) {
      if (value === undefined) delete payload[name]
      else payload[name] = value
    }
    const realm = state.realm
    void issuer
      .sign(
        { alg: 'RS256', typ: 'statuslist+jwt', kid: kidOf(issuer, realm), ...state.header },
        payload,
        { realm },
      )
      .then((jwt) => {
        res.writeHead(200, { 'content-type': 'application/statuslist+jwt' }).end(jwt)
      })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const state: StatusListServer = {
    origin: `http://127.0.0.1:${port}/`,
    uri: (path = '/lists/1') => `http://127.0.0.1:${port}${path}`,
    setStatuses(statuses, { bits = 1, path = '/lists/1' } = {}) {
      lists.set(path, { statuses: [...statuses], bits })
    },
    setStatus(index, value, path = '/lists/1') {
      const list = lists.get(path)
      if (list === undefined) throw new Error(`no list at ${path}`)
      list.statuses[index] = value
    },
    claims: {},
    header: {},
    realm: undefined,
    fault: undefined,
    fetches: new Map(),
    lastAccept: undefined,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
  return state
}

function kidOf(issuer: TestIssuer, realm: string | undefined): string | undefined {
  const key = issuer.jwks(realm).keys.find((jwk) => jwk.alg === 'RS256' || jwk.kty === 'RSA')
  return key?.kid as string | undefined
}
