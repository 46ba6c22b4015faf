/**
 * What docs/operating.md's "Revocation without a shared store" leaves to the application
 * (`declare function readRevocations()`): its records. One: every token of `mallory` issued
 * before the host started.
 */
import type { RevokeOptions } from 'tollgate'

const startedAt = Math.floor(Date.now() / 1000)

export async function readRevocations(): Promise<RevokeOptions[]> {
  return [{ issuer: 'https://sso.example.com/realms/acme', sub: 'mallory', notBefore: startedAt }]
}
