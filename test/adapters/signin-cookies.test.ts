/**
 * A browser over HTTP/2, or a proxy, may send its cookies as several `Cookie` fields (RFC 9113
 * §8.2.3), which hosts join with "; " (Node, undici, `Deno.serve`). Sign-in reads the session and
 * the transaction through every adapter from two such fields; on a host that joins them with ", "
 * instead, it reads no session (signed out) rather than split on commas (src/signin/cookies.ts
 * says why).
 */
import { execFileSync } from 'node:child_process'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { RunningProvider } from '../helpers/oidc-provider.js'
import { rawRequest } from '../helpers/raw-request.js'
import { runtimeBinary } from '../helpers/runtimes.js'
import {
  APP_ORIGIN,
  cookieHeader,
  SIGNIN_APPS,
  type SignInAppFactory,
  signInOptions,
  signInWith,
  startSignIn,
  startSignInProvider,
} from '../helpers/signin.js'

let provider: RunningProvider
beforeAll(async () => {
  provider = await startSignInProvider()
})
afterAll(async () => {
  await provider.close()
})

/**
 * The app served by a host that joins repeated `Cookie` fields with ", " (the generic rule for
 * repeated fields, which RFC 9113 §8.2.3 replaces with "; " for cookies): the test host's listener
 * gets the fields already joined that way.
 */
function onCommaJoiningHost(createApp: SignInAppFactory): SignInAppFactory {
  return (options) => {
    const server = createApp(options)
    const listeners = server.listeners('request') as Array<
      (req: IncomingMessage, res: ServerResponse) => void
    >
    server.removeAllListeners('request')
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const raw: string[] = []
      const cookies: string[] = []
      for (let index = 0; index < req.rawHeaders.length; index += 2) {
        const [name, value] = [req.rawHeaders[index] as string, req.rawHeaders[index + 1] as string]
        if (name.toLowerCase() === 'cookie') cookies.push(value)
        else raw.push(name, value)
      }
      if (cookies.length > 0) raw.push('Cookie', cookies.join(', '))
      req.rawHeaders = raw
      for (const listener of listeners) listener(req, res)
    })
    return server
  }
}

const COMMA_HOST_APPS = SIGNIN_APPS.filter(([name]) => name === 'hono' || name === 'fetch').map(
  ([name, createApp]): [string, SignInAppFactory] => [name, onCommaJoiningHost(createApp)],
)

/** Status, Location and body of a raw answer (every adapter here answers with a length). */
function answerOf(raw: string) {
  const end = raw.indexOf('\r\n\r\n')
  const head = raw.slice(0, end)
  const location = /^location: (.*)$/im.exec(head)?.[1]
  return { status: Number(raw.slice(9, 12)), location, body: raw.slice(end + 4) }
}

/** Sends `lines` (request line first) with the cookies as two fields: another cookie, then ours. */
async function withTwoCookieFields(app: Server, requestLine: string, cookie: string) {
  try {
    const { raw } = await rawRequest(app, [requestLine, 'Cookie: theme=dark', `Cookie: ${cookie}`])
    return answerOf(raw)
  } finally {
    app.close()
  }
}

describe('sign-in with the cookies in two Cookie fields', () => {
  it('Deno.serve joins two Cookie fields with "; ", as Node does', () => {
    const script = `
      const server = Deno.serve({ hostname: '127.0.0.1', port: 0, onListen() {} }, (r) => new Response(r.headers.get('cookie')))
      const conn = await Deno.connect({ hostname: '127.0.0.1', port: server.addr.port })
      await conn.write(new TextEncoder().encode('GET / HTTP/1.1\\r\\nHost: x\\r\\nCookie: a=1\\r\\nCookie: b=2\\r\\nConnection: close\\r\\n\\r\\n'))
      let text = ''
      const buffer = new Uint8Array(4096)
      for (;;) { const n = await conn.read(buffer); if (n === null) break; text += new TextDecoder().decode(buffer.subarray(0, n)) }
      console.log(text.slice(text.indexOf('\\r\\n\\r\\n') + 4))
      await server.shutdown()`
    const body = execFileSync(runtimeBinary('deno'), ['eval', script], {
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1' },
    })
    expect(body.trim()).toBe('a=1; b=2')
  })

  it('reads the session on every adapter: the same answer on each', async () => {
    const answers = await Promise.all(
      SIGNIN_APPS.map(async ([name, createApp]) => {
        const app = createApp(signInOptions(provider))
        const { cookie } = await signInWith(app, provider, 'dana')
        return [name, await withTwoCookieFields(app, 'GET /me HTTP/1.1', cookie)] as const
      }),
    )
    const [[, express] = ['', undefined], ...others] = answers
    expect(express?.status).toBe(200)
    expect(JSON.parse(express?.body ?? '')).toMatchObject({ subject: 'dana' })
    for (const [name, answer] of others) expect({ name, ...answer }).toEqual({ name, ...express })
  })

  it('finds the sign-in transaction at the callback on every adapter', async () => {
    const answers = await Promise.all(
      SIGNIN_APPS.map(async ([name, createApp]) => {
        const app = createApp(signInOptions(provider))
        const started = await startSignIn(app, '/records?page=2')
        const back = await provider.followAuthorization(
          started.location,
          `${APP_ORIGIN}/auth/callback`,
          'erin',
        )
        return [
          name,
          await withTwoCookieFields(
            app,
            `GET ${back.pathname}${back.search} HTTP/1.1`,
            cookieHeader(started.cookies),
          ),
        ] as const
      }),
    )
    for (const [name, answer] of answers) {
      expect({ name, status: answer.status, location: answer.location }).toEqual({
        name,
        status: 302,
        location: '/records?page=2',
      })
    }
  })

  it('reads no session on a host joining the fields with ", ": the signed-out answer, as without the cookie', async () => {
    for (const [name, createApp] of COMMA_HOST_APPS) {
      const app = createApp(signInOptions(provider))
      const { cookie } = await signInWith(app, provider, 'dana')
      const signedOut = answerOf((await rawRequest(app, ['GET /me HTTP/1.1'])).raw)
      const twoFields = await withTwoCookieFields(app, 'GET /me HTTP/1.1', cookie)
      expect(signedOut.status).not.toBe(200)
      expect({ name, ...twoFields }).toEqual({ name, ...signedOut })
    }
  })
})
