/**
 * Renders the option reference pages (`docs/reference/*-options.md`) from the options schemas:
 * each row's path, what it accepts and its default come from the schema (the rules the code
 * applies), its description from the first sentence of the option's TSDoc on its interface (the
 * one prose description). `test/docs/options-reference.test.ts` fails when a committed page
 * differs from what this renders.
 *
 *     npx tsx scripts/options-docs.ts           # writes the pages
 *     npx tsx scripts/options-docs.ts --check   # exits 1 when one is stale
 *
 * @module
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { relative } from 'node:path'
import ts from 'typescript'

import { tokenSourceSchema } from '../src/client/options.js'
import { dpopSchema } from '../src/dpop/options.js'
import { gateSchema } from '../src/gate/options.js'
import { rateLimitSchema } from '../src/limits/options.js'
import { tenantSchema } from '../src/limits/tenant.js'
import { type Option, referenceRows } from '../src/options-kit.js'
import { revocationSchema } from '../src/revocation/options.js'
import { signInSchema } from '../src/signin/options.js'
import { testIssuerSchema } from '../src/testing/options.js'

/** One reference page: which schema, under which path, described by which interface. */
export interface ReferencePage {
  readonly file: string
  readonly title: string
  /** What the page covers, and where the guide is. */
  readonly intro: string
  readonly schema: Option<unknown>
  /** Where the options sit (`options` for a factory's own options). */
  readonly path: string
  /** The interface whose TSDoc describes the top-level options. */
  readonly type: string
}

/** Files whose interfaces hold the options' TSDoc. */
const SOURCES = [
  'src/gate/options.ts',
  'src/dpop/options.ts',
  'src/limits/options.ts',
  'src/limits/tenant.ts',
  'src/revocation/options.ts',
  'src/client/options.ts',
  'src/client/parameters.ts',
  'src/signin/options.ts',
  'src/testing/options.ts',
]

export const PAGES: readonly ReferencePage[] = [
  {
    file: 'docs/reference/gate-options.md',
    title: 'Gate options',
    intro:
      "Options of `createGate()` and of every adapter's `tollgate()`. Guide: [the gateway](../gateway.md).",
    schema: gateSchema,
    path: 'options',
    type: 'GateOptions',
  },
  {
    file: 'docs/reference/tenant-options.md',
    title: 'Tenant options',
    intro:
      "The gate's `tenant` option: where the tenant a verified token acts for comes from, and which tenants are let in. Guide: [tenants and rate limits](../gateway.md#tenants-and-rate-limits); in detail: [the gateway reference](gateway.md#tenants-and-rate-limits-in-detail).",
    schema: tenantSchema,
    path: 'tenant',
    type: 'TenantOptions',
  },
  {
    file: 'docs/reference/rate-limit-options.md',
    title: 'Rate-limit options',
    intro:
      "The gate's `rateLimit` option (it needs `tenant`). Guide: [tenants and rate limits](../gateway.md#tenants-and-rate-limits); stores: [stores.md](../stores.md).",
    schema: rateLimitSchema,
    path: 'rateLimit',
    type: 'RateLimitOptions',
  },
  {
    file: 'docs/reference/revocation-options.md',
    title: 'Revocation options',
    intro: "The gate's `revocation` option. Guide: [revocation](../operating.md#revocation).",
    schema: revocationSchema,
    path: 'revocation',
    type: 'RevocationOptions',
  },
  {
    file: 'docs/reference/dpop-options.md',
    title: 'DPoP options',
    intro:
      "The gate's `dpop` option (RFC 9449). Guide: [DPoP](gateway.md#dpop-sender-constrained-tokens-rfc-9449).",
    schema: dpopSchema,
    path: 'dpop',
    type: 'DpopOptions',
  },
  {
    file: 'docs/reference/token-source-options.md',
    title: 'Token source options',
    intro: 'Options of `createTokenSource()`. Guide: [clients](../clients.md).',
    schema: tokenSourceSchema,
    path: 'options',
    type: 'TokenSourceOptions',
  },
  {
    file: 'docs/reference/signin-options.md',
    title: 'Sign-in options',
    intro:
      "Options of `createSignIn()` and of every adapter's `signIn()`. Guide: [sign-in](../signin.md).",
    schema: signInSchema,
    path: 'options',
    type: 'SignInOptions',
  },
  {
    file: 'docs/reference/test-issuer-options.md',
    title: 'Test issuer options',
    intro:
      'Options of `createTestIssuer()` (`tollgate/testing`). Guide: [testing](../testing.md). The development provider, `createDevProvider()`: its options (`resources[].accessTokenFormat`, `clients[].exchange`…), `introspectionEndpoint` and `accessTokenFor()` are in [testing.md](../testing.md#trying-everything-locally-a-development-openid-provider) and [its `accessTokenFor()`](../testing.md#a-users-token-without-the-pages-accesstokenfor).',
    schema: testIssuerSchema,
    path: 'options',
    type: 'TestIssuerOptions',
  },
]

interface Described {
  readonly members: Map<string, string>
  readonly bases: string[]
}

/** Every interface of `SOURCES`: its members' TSDoc and the interfaces it extends. */
function readInterfaces(): Map<string, Described> {
  const interfaces = new Map<string, Described>()
  for (const file of SOURCES) {
    const text = readFileSync(file, 'utf8')
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true)
    for (const statement of source.statements) {
      if (!ts.isInterfaceDeclaration(statement)) continue
      const members = new Map<string, string>()
      for (const member of statement.members) {
        if (!ts.isPropertySignature(member) || !ts.isIdentifier(member.name)) continue
        const docs = ts.getJSDocCommentsAndTags(member).filter(ts.isJSDoc)
        const text = docs.map((doc) => ts.getTextOfJSDocComment(doc.comment) ?? '').join(' ')
        if (text !== '') members.set(member.name.text, text)
      }
      const bases = (statement.heritageClauses ?? []).flatMap((clause) =>
        clause.types.map((type) => type.expression.getText(source)),
      )
      interfaces.set(statement.name.text, { members, bases })
    }
  }
  return interfaces
}

/** The TSDoc of `key` on `type` or an interface it extends. */
function docOf(interfaces: Map<string, Described>, type: string, key: string): string | undefined {
  const found = interfaces.get(type)
  if (found === undefined) return undefined
  return (
    found.members.get(key) ??
    found.bases.map((base) => docOf(interfaces, base, key)).find((doc) => doc !== undefined)
  )
}

/** The first sentence: up to the first period that ends one (not `e.g.`, not inside code). */
export function firstSentence(text: string): string {
  const flat = text
    .replace(/\{@link\s+([^}\s|]+)(?:[\s|][^}]*)?\}/g, '`$1`')
    .replace(/\s+/g, ' ')
    .trim()
  let inCode = false
  for (let index = 0; index < flat.length; index++) {
    const char = flat[index]
    if (char === '`') inCode = !inCode
    if (char !== '.' || inCode) continue
    const next = flat[index + 1]
    if (next !== undefined && next !== ' ') continue
    if (/\b(?:e\.g|i\.e|etc|vs)$/.test(flat.slice(0, index))) continue
    return flat.slice(0, index + 1)
  }
  return flat
}

const cell = (text: string): string => text.replaceAll('|', '\\|')
const code = (text: string): string =>
  /^(?:['[{(\d/]|true$|false$)/.test(text) ? `\`${text}\`` : text

/** The page as the schema and the TSDoc say it; `problems` collects options without TSDoc. */
export function renderPage(page: ReferencePage, problems: string[] = []): string {
  const interfaces = readInterfaces()
  const lines = [
    '<!-- Generated by scripts/options-docs.ts from the options schemas and their TSDoc: do not edit. -->',
    '',
    `# ${page.title}`,
    '',
    '[README](../../README.md) · [all guides](../README.md)',
    '',
    page.intro,
    'Every option is validated once, at creation: a wrong one throws a `TypeError` naming it and what to change.',
    '',
    '| option | accepts | default | description |',
    '| --- | --- | --- | --- |',
  ]
  for (const row of referenceRows(page.schema, page.path, page.type)) {
    const doc = row.type === undefined ? undefined : docOf(interfaces, row.type, row.key)
    if (doc === undefined) problems.push(`${page.file}: ${row.path} has no TSDoc`)
    // A number the TSDoc gives as the default must be the schema's.
    const said = /\bDefault:? `?(\d[\d ,_]*\d|\d)\b/.exec(doc ?? '')?.[1]?.replace(/[ ,_]/g, '')
    if (said !== undefined && /^\d+$/.test(row.doc.default ?? '') && said !== row.doc.default) {
      problems.push(
        `${page.file}: ${row.path}'s TSDoc says Default ${said}, the schema ${row.doc.default}`,
      )
    }
    const target =
      row.doc.see === undefined ? undefined : relative('docs/reference', `docs/${row.doc.see}`)
    const see = target === undefined ? '' : ` See [${target.replace(/#.*/, '')}](${target}).`
    const description = `${firstSentence(doc ?? '')}${see}`.trim()
    lines.push(
      `| \`${row.path}\` | ${cell(row.doc.accepts)} | ${cell(code(row.doc.default ?? '—'))} | ${cell(description)} |`,
    )
  }
  return `${lines.join('\n')}\n`
}

/** Pages whose committed text differs from what `pages` render. */
export function stalePages(pages: readonly ReferencePage[] = PAGES): string[] {
  return pages
    .filter((page) => {
      let committed: string | undefined
      try {
        committed = readFileSync(page.file, 'utf8')
      } catch {}
      return committed !== renderPage(page)
    })
    .map((page) => page.file)
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv.includes('--check')) {
    const stale = stalePages()
    if (stale.length > 0) {
      console.error(`stale, run npx tsx scripts/options-docs.ts: ${stale.join(', ')}`)
      process.exit(1)
    }
  } else {
    const problems: string[] = []
    for (const page of PAGES) writeFileSync(page.file, renderPage(page, problems))
    if (problems.length > 0) {
      console.error(problems.join('\n'))
      process.exit(1)
    }
  }
}
