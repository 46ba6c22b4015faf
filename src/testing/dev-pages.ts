/**
 * The development provider's pages: the sign-in page (a button per configured user) and the
 * sign-out confirmation. Plain HTML, no script, so a person can click through and a headless
 * browser can drive them.
 *
 * @module
 */
import type { DevUser } from './dev-options.js'

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`)

const STYLE =
  'body{font:16px system-ui,sans-serif;margin:2rem auto;max-width:30rem}button{display:block;margin:.5rem 0;padding:.5rem 1rem;font:inherit}'

/**
 * The sign-in page of an interaction: choosing a user signs them in (no password), with `acr`
 * when the request asked for one the provider supports (a step-up).
 */
export function signInPage(
  realm: string,
  action: string,
  clientId: string,
  users: Iterable<DevUser>,
  acr?: string,
): string {
  const buttons = Array.from(users, (user) => {
    const label = user.name === undefined ? user.sub : `${user.name} (${user.sub})`
    return `<button type="submit" name="user" value="${escapeHtml(user.sub)}">${escapeHtml(label)}</button>`
  }).join('\n')
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in to ${escapeHtml(realm)}</title><style>${STYLE}</style></head>
<body><h1>Sign in to ${escapeHtml(realm)}</h1>
<p>${escapeHtml(clientId)} asks you to sign in. Development provider: choose a user.</p>
${acr === undefined ? '' : `<p id="acr">Authentication asked for: ${escapeHtml(acr)}</p>\n`}<form method="post" action="${escapeHtml(action)}">
${buttons}
</form></body></html>`
}

/** The end-session confirmation; `form` is oidc-provider's hidden form (`op.logoutForm`). */
export function signOutPage(realm: string, form: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign out of ${escapeHtml(realm)}</title><style>${STYLE}</style></head>
<body>${form}<h1>Sign out of ${escapeHtml(realm)}?</h1>
<button type="submit" form="op.logoutForm" name="logout" value="yes">Sign out</button>
</body></html>`
}
