/**
 * Routing of the test issuer's HTTP endpoints, Keycloak's paths under `/realms/{realm}`, and
 * the exact paths of the issuers of the `issuers` option.
 *
 * @module
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http'

import { answerFault } from './faults.js'
import { jsonReply, type Reply, sendReply } from './http.js'
import { discoveryDocument, type FaultEndpoint, jwksDocument, type RealmState } from './realm.js'

/** What a path outside `/realms` serves, for the `issuers` option. */
export interface PathRoute {
  readonly realm: RealmState
  readonly endpoint: FaultEndpoint | 'token'
}

export interface Routes {
  readonly realms: ReadonlyMap<string, RealmState>
  /** Exact paths of the issuers at paths of their own. */
  readonly paths: ReadonlyMap<string, PathRoute>
  /** Answers a POST to the realm's token endpoint. */
  token(req: IncomingMessage, realm: RealmState): Promise<Reply>
  /** Answers a GET of one of the realm's status lists. */
  statusList(realm: RealmState, name: string): Promise<Reply>
}

const REALM_PATH = /^\/realms\/([^/]+)\/(.*)$/
const NOT_FOUND = jsonReply(404, { error: 'not_found' })
const UNKNOWN_REALM = jsonReply(404, { error: 'Realm does not exist' })
const SERVER_ERROR = jsonReply(500, { error: 'server_error' })

function methodNotAllowed(allow: string): Reply {
  return jsonReply(405, { error: 'method_not_allowed' }, { allow })
}

function serveDocument(
  req: IncomingMessage,
  res: ServerResponse,
  realm: RealmState,
  endpoint: FaultEndpoint,
): Reply | undefined {
  if (req.method !== 'GET' && req.method !== 'HEAD') return methodNotAllowed('GET, HEAD')
  let healthy: Reply
  if (endpoint === 'certs') {
    realm.certsCount += 1
    healthy = realm.certsOverride ?? jsonReply(200, jwksDocument(realm))
  } else {
    realm.discoveryCount += 1
    healthy = jsonReply(200, discoveryDocument(realm))
  }
  const fault = realm.faults[endpoint]
  return fault ? answerFault(res, fault, healthy) : healthy
}

function failed(res: ServerResponse): void {
  if (res.headersSent) res.destroy()
  else sendReply(res, SERVER_ERROR)
}

/** The request listener: never throws, answers 404 for anything it does not serve. */
export function createRequestHandler(routes: Routes): RequestListener {
  // The reply to send, or undefined when the route answers on its own.
  const route = (req: IncomingMessage, res: ServerResponse): Reply | undefined => {
    const path = req.url?.split('?', 1)[0] ?? ''
    const match = REALM_PATH.exec(path)
    if (!match) {
      const at = routes.paths.get(path)
      return at ? serve(req, res, at.realm, at.endpoint) : NOT_FOUND
    }
    const realm = routes.realms.get(match[1] ?? '')
    if (!realm) return UNKNOWN_REALM
    switch (match[2]) {
      case 'protocol/openid-connect/certs':
        return serve(req, res, realm, 'certs')
      case '.well-known/openid-configuration':
        return serve(req, res, realm, 'discovery')
      case 'protocol/openid-connect/token':
        return serve(req, res, realm, 'token')
      default:
        return statusList(req, res, realm, match[2] ?? '')
    }
  }
  const serve = (
    req: IncomingMessage,
    res: ServerResponse,
    realm: RealmState,
    endpoint: FaultEndpoint | 'token',
  ): Reply | undefined => {
    if (endpoint !== 'token') return serveDocument(req, res, realm, endpoint)
    if (req.method !== 'POST') return methodNotAllowed('POST')
    routes.token(req, realm).then(
      (reply) => sendReply(res, reply),
      () => failed(res),
    )
    return undefined
  }
  const statusList = (
    req: IncomingMessage,
    res: ServerResponse,
    realm: RealmState,
    rest: string,
  ): Reply | undefined => {
    const name = rest.startsWith('statuslists/') ? rest.slice('statuslists/'.length) : undefined
    if (name === undefined || !realm.statusLists.has(name)) return NOT_FOUND
    if (req.method !== 'GET') return methodNotAllowed('GET')
    routes.statusList(realm, name).then(
      (reply) => sendReply(res, reply),
      () => failed(res),
    )
    return undefined
  }
  return (req, res) => {
    try {
      const reply = route(req, res)
      if (reply) sendReply(res, reply)
    } catch {
      failed(res)
    }
  }
}
