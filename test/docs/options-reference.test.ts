/**
 * The option tables in docs/reference/ are generated from the options schemas (the rules the code
 * applies) and the options' TSDoc (their prose): a committed table that differs from what the
 * schema renders fails here, so a default or a range changed in code cannot leave the docs behind.
 */
import { describe, expect, it } from 'vitest'
import { firstSentence, PAGES, renderPage, stalePages } from '../../scripts/options-docs.js'
import { clientAuthenticationFields } from '../../src/client/options.js'
import { gateSchema, type JWKSOptions } from '../../src/gate/options.js'
import { tenantSchema } from '../../src/limits/tenant.js'
import { group, int } from '../../src/options-kit.js'

const gatePage = PAGES.find((page) => page.file === 'docs/reference/gate-options.md')

describe('the option reference pages', () => {
  it('are what the schemas and their TSDoc render (npx tsx scripts/options-docs.ts)', () => {
    expect(stalePages()).toEqual([])
  })

  it('describe every option with its TSDoc, whose stated default is the schema one', () => {
    const problems: string[] = []
    for (const page of PAGES) renderPage(page, problems)
    expect(problems).toEqual([])
  })

  it('go stale when a default changes in the schema', () => {
    if (gatePage === undefined) throw new Error('no gate page')
    const jwks = gateSchema.fields.jwks
    const changedJwks = group<JWKSOptions>()(
      { ...jwks.fields, timeoutMs: int({ min: 1, max: 60_000, fallback: 6000 }) },
      { doc: jwks.doc },
    )
    const changed = { ...gateSchema, fields: { ...gateSchema.fields, jwks: changedJwks } }
    // The changed schema reads the new default, and its page no longer matches the committed one.
    expect(changedJwks.read(undefined, 'jwks', {}).timeoutMs).toBe(6000)
    expect(renderPage({ ...gatePage, schema: changed })).toContain(
      '| `jwks.timeoutMs` | integer 1–60 000 | `6000` |',
    )
    expect(stalePages([{ ...gatePage, schema: changed }])).toEqual([gatePage.file])
    expect(stalePages([gatePage])).toEqual([])
  })

  it('cover the tenant options: a row per member of their schema, stale when one changes', () => {
    const page = PAGES.find(({ file }) => file === 'docs/reference/tenant-options.md')
    if (page === undefined) throw new Error('no tenant page')
    const rendered = renderPage(page)
    for (const key of Object.keys(tenantSchema.fields)) {
      expect(rendered).toContain(`| \`tenant.${key}\` |`)
    }
    const { claim } = tenantSchema.fields
    const changed = {
      ...tenantSchema,
      fields: {
        ...tenantSchema.fields,
        claim: { ...claim, doc: { ...claim.doc, default: "'org'" } },
      },
    }
    expect(stalePages([{ ...page, schema: changed }])).toEqual([page.file])
  })

  it('describe the client fields by their one TSDoc, on the interface the options extend', () => {
    for (const file of [
      'docs/reference/token-source-options.md',
      'docs/reference/signin-options.md',
    ]) {
      const page = PAGES.find((candidate) => candidate.file === file)
      if (page === undefined) throw new Error(`no page ${file}`)
      const rendered = renderPage(page)
      for (const key of Object.keys(clientAuthenticationFields)) {
        expect(rendered).toContain(`| \`${key}\` |`)
      }
      expect(rendered).toContain(
        "| `clientId` | string of 1 to 255 characters | required | The client's id at the provider. |",
      )
      expect(rendered).toContain(
        "| `clientAuth` | 'client_secret_basic' \\| 'client_secret_post' \\| 'private_key_jwt' | by the credential | How the client authenticates at the provider's endpoints. |",
      )
    }
  })

  it('report a TSDoc whose stated default is not the schema one', () => {
    if (gatePage === undefined) throw new Error('no gate page')
    const jwks = gateSchema.fields.jwks
    const changedJwks = group<JWKSOptions>()(
      { ...jwks.fields, maxBodyBytes: int({ min: 1024, max: 16_777_216, fallback: 1024 }) },
      { doc: jwks.doc },
    )
    const problems: string[] = []
    renderPage(
      {
        ...gatePage,
        schema: { ...gateSchema, fields: { ...gateSchema.fields, jwks: changedJwks } },
      },
      problems,
    )
    expect(problems).toEqual([
      "docs/reference/gate-options.md: jwks.maxBodyBytes's TSDoc says Default 262144, the schema 1024",
    ])
  })

  it('take the first sentence of the TSDoc, not one cut at e.g. or inside code', () => {
    expect(
      firstSentence('Requests for which the gate does nothing (e.g. CORS preflight). More.'),
    ).toBe('Requests for which the gate does nothing (e.g. CORS preflight).')
    expect(firstSentence('Keys in `a. b` stay.\n Default 5.')).toBe('Keys in `a. b` stay.')
    expect(firstSentence('See {@link RevocationOptions}. Then.')).toBe('See `RevocationOptions`.')
  })
})
