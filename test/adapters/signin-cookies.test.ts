/**
 * A browser over HTTP/2, or a proxy, may send its cookies as several `Cookie` fields (RFC 9113
 * §8.2.3). Node joins them with "; ", `Headers` as the Fetch standard has it with ", " (Deno,
 * Workers). Sign-in reads the session and the transaction the same whatever the joining: real
 * requests with two `Cookie` fields over a raw socket, through every adapter on Node and through
 * the Fetch and Hono adapters on a host that joins as the Fetch standard does.
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
 * The app served by a host whose `Headers` join repeated fields with ", ", as Deno's and workerd's
 * do (undici, under Node and `@hono/node-server`, joins `Cookie` with "; " instead): the test
 * host's listener gets the `Cookie` fields already joined that way.
 */
function onFetchStandardHost(createApp: SignInAppFactory): SignInAppFactory {
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

const FETCH_HOST_APPS = SIGNIN_APPS.filter(([name]) => name === 'hono' || name === 'fetch')
const APPS: ReadonlyArray<[string, SignInAppFactory]> = [
  ...SIGNIN_APPS,
  ...FETCH_HOST_APPS.map(([name, createApp]): [string, SignInAppFactory] => [
    `${name} on a host joining fields with ", "`,
    onFetchStandardHost(createApp),
  ]),
]

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
  it('Deno’s Headers join two Cookie fields with ", " (what the emulated host does)', () => {
    const joined = execFileSync(
      runtimeBinary('deno'),
      [
        'eval',
        'const h = new Headers(); h.append("Cookie", "a=1"); h.append("Cookie", "b=2"); console.log(h.get("cookie"))',
      ],
      { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } },
    )
    expect(joined.trim()).toBe('a=1, b=2')
  })

  it('reads the session on every adapter and host: the same answer on each', async () => {
    const answers = await Promise.all(
      APPS.map(async ([name, createApp]) => {
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

  it('finds the sign-in transaction at the callback on every adapter and host', async () => {
    const answers = await Promise.all(
      APPS.map(async ([name, createApp]) => {
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
})
