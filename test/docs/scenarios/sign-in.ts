/**
 * docs/signin.md and docs/frameworks/signin-fetch-hono-fastify.md: each sample signs a user in at
 * the development provider (`AUTH_URL`, realm `acme`, client `office-web`) and calls the office
 * API with the user's token.
 */
import { expect } from 'vitest'

import { freePort } from '../../helpers/redis.js'
import { answer, type SampleProgram, type Scenario, type ScenarioTable } from '../scenario.js'
import { DEV_USERS } from '../world.js'
import { signInAs } from './sign-in-flow.js'

const HTML = { accept: 'text/html' }

/** Without a session: a page is sent to sign in, an API call gets 401 `login_required`. */
async function refusedWithoutSession(app: SampleProgram, path = '/records'): Promise<void> {
  const page = await app.fetch(path, { redirect: 'manual', headers: HTML })
  expect(page.status, app.output()).toBe(302)
  expect(page.headers.get('location')).toBe(`/auth/login?returnTo=${encodeURIComponent(path)}`)
  expect(await answer(await app.fetch(path))).toMatchObject({
    status: 401,
    body: { error: 'login_required' },
  })
}

/** A sign-in sample whose `/records` answers `{ user: sub, tokenLength }`. */
const recordsWithTokenLength = (framework: string, env: 'hono' | 'plain' = 'plain'): Scenario => ({
  promises: `${framework}: /records without a session 302 to sign in (page) or 401 (API); after signing in at the provider 200 with the user and the office token`,
  async run({ start, world }) {
    const provider = await world.devProvider()
    const app = await start({
      env: { AUTH_URL: provider.url },
      ...(env === 'hono' ? { host: 'fetch-app.ts' } : {}),
    })
    await refusedWithoutSession(app)
    const { cookie, location } = await signInAs(app, provider, 'bob')
    expect(location).toBe('/records')
    const records = await answer(await app.fetch('/records', { headers: { cookie } }))
    expect(records).toMatchObject({ status: 200, body: { user: 'bob' } })
    expect((records.body as { tokenLength: number }).tokenLength).toBeGreaterThan(100)
  },
})

/** The `const options = {…}` block of a sample. */
function optionsOf(code: string): string | undefined {
  return /^const options = \{\n[\s\S]*?^\}\n/m.exec(code)?.[0]
}

export const SIGN_IN: ScenarioTable = {
  'docs/signin.md': {
    'The complete flow, Express': {
      promises:
        'a page without a session 302 to sign in; after signing in /records 200 with the name and the office answer; sign-out from another origin 400, from baseUrl 303 to the end-session endpoint; then 401',
      async run({ start, world }) {
        const provider = await world.devProvider()
        const app = await start({ env: { AUTH_URL: provider.url } })
        await refusedWithoutSession(app)
        const { cookie } = await signInAs(app, provider, 'alice')
        expect(await answer(await app.fetch('/records', { headers: { cookie } }))).toEqual({
          status: 200,
          body: {
            user: DEV_USERS.alice.name,
            namespaces: {
              namespaces: ['records'],
              caller: { aud: 'office', sub: 'alice' },
            },
          },
        })
        const logout = (origin: string) =>
          app.fetch('/auth/logout', {
            method: 'POST',
            redirect: 'manual',
            headers: { cookie, origin },
          })
        expect((await logout('https://evil.example')).status).toBe(400)
        const out = await logout('https://office.example.com')
        expect(out.status).toBe(303)
        const endSession = new URL(out.headers.get('location') ?? '')
        expect(`${endSession.origin}${endSession.pathname}`).toBe(provider.endSessionEndpoint)
        expect(endSession.searchParams.get('id_token_hint')).toMatch(/^ey/)
        expect(endSession.searchParams.get('post_logout_redirect_uri')).toBe(
          'https://office.example.com/',
        )
        expect((await app.fetch('/records', { headers: { cookie } })).status).toBe(401)
      },
    },
    'The complete flow, Koa': recordsWithTokenLength('Koa'),
    'The key ring': {
      promises:
        'builds both sign-ins and ends at once with neither the ring, the secret nor the provider at hand: each is read when first needed',
      async run({ start }) {
        const program = await start({
          until: 'none',
          env: { SIGNIN_KEYS: '', OFFICE_WEB_SECRET: '' },
        })
        expect(await program.finished()).toBe('')
      },
    },
  },

  'docs/frameworks/signin-fetch-hono-fastify.md': {
    'Sign-in with Fetch handlers, Hono and Fastify': {
      promises:
        'the options run as printed (a Redis session store), and every other sample of the page writes out these same options',
      async run({ start, sample }) {
        const program = await start({ until: 'none', host: 'import-only.ts' })
        await program.finished()
        const options = optionsOf(sample.code)
        expect(options).toMatch(/store: createRedisSessionStore\(\{ redis \}\)/)
        const { allSamples } = await import('../../helpers/doc-samples.js')
        const others = allSamples().filter(
          (other) => other.file === sample.file && other.line !== sample.line,
        )
        expect(others).toHaveLength(4)
        for (const other of others)
          expect(optionsOf(other.code), `line ${other.line}`).toBe(options)
      },
    },
    'Fetch handlers (`tollgate/fetch`)': [
      {
        promises:
          'on Bun: /public says signed out, then, after signing in through the sign-in routes withSignIn answers, signed in; another path 404; the exported GET 401 without a user, 200 with the office answer',
        async run({ start, world }) {
          const provider = await world.devProvider()
          const exportsPort = await freePort()
          const app = await start({
            runtime: 'bun',
            host: 'bun-exports.ts',
            env: { AUTH_URL: provider.url, EXPORTS_PORT: String(exportsPort) },
          })
          expect(await answer(await app.fetch('/public'))).toEqual({
            status: 200,
            body: { signedIn: false },
          })
          const { cookie } = await signInAs(app, provider, 'alice')
          expect(await answer(await app.fetch('/public', { headers: { cookie } }))).toEqual({
            status: 200,
            body: { signedIn: true },
          })
          expect((await app.fetch('/elsewhere', { headers: { cookie } })).status).toBe(404)

          const route = `http://127.0.0.1:${exportsPort}/records`
          expect(await answer(await fetch(route))).toMatchObject({
            status: 401,
            body: { error: 'login_required' },
          })
          expect(await answer(await fetch(route, { headers: { cookie } }))).toMatchObject({
            status: 200,
            body: { user: 'alice', namespaces: { caller: { aud: 'office', sub: 'alice' } } },
          })
        },
      },
      {
        promises:
          'handle() with its own error page: /records without a session 401 ERR_SIGNIN_REQUIRED; after signing in 200; another path 404',
        async run({ start, world }) {
          const provider = await world.devProvider()
          const app = await start({
            host: 'fetch-app.ts',
            env: { AUTH_URL: provider.url, SAMPLE_EXPORT: 'fetchHandler' },
          })
          expect(await answer(await app.fetch('/records'))).toEqual({
            status: 401,
            body: { error: 'ERR_SIGNIN_REQUIRED' },
          })
          const { cookie } = await signInAs(app, provider, 'alice')
          const records = await answer(await app.fetch('/records', { headers: { cookie } }))
          expect(records).toMatchObject({ status: 200, body: { user: 'alice' } })
          expect((await app.fetch('/elsewhere', { headers: { cookie } })).status).toBe(404)
        },
      },
    ],
    'Hono (`tollgate/hono`)': recordsWithTokenLength('Hono (its default export)', 'hono'),
    'Fastify (`tollgate/fastify`)': recordsWithTokenLength('Fastify'),
  },
}
