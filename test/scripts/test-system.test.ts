import { execFileSync, spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { describe, expect, it } from 'vitest'

const SCRIPT = join(import.meta.dirname, '../../scripts/test-system.sh')
const README = readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8')
const BASH = execFileSync('bash', ['-c', 'command -v bash'], { encoding: 'utf8' }).trim()

/** The packages the README's "Two commands" section says `npm test` installs. */
function packagesTheReadmeNames(): string[] {
  const paragraph = README.slice(README.indexOf('`npm test` first runs `scripts/test-system.sh`'))
  const text = paragraph.slice(0, paragraph.indexOf('stops.'))
  return [
    ...text.matchAll(
      /`(redis-server|postgresql|memcached|chromium|nginx|libnginx-mod-http-js|haproxy|openssl|curl|valgrind)`/g,
    ),
  ].map((m) => m[1] ?? '')
}

describe('scripts/test-system.sh', () => {
  it('checks for every Debian package the README says npm test installs, and no other', () => {
    const script = readFileSync(SCRIPT, 'utf8')
    const checked = [...script.matchAll(/missing\+=\(([a-z-]+)\)/g)].map((m) => m[1])
    expect(packagesTheReadmeNames().sort()).toEqual([
      'chromium',
      'curl',
      'haproxy',
      'libnginx-mod-http-js',
      'memcached',
      'nginx',
      'openssl',
      'postgresql',
      'redis-server',
      'valgrind',
    ])
    expect(checked.sort()).toEqual(packagesTheReadmeNames().sort())
  })

  it('names the missing packages and stops, installing nothing, when it is not root', () => {
    // A PATH holding only an `id` that answers a non-root uid: no redis-server, memcached or
    // chromium can be found on it.
    const bin = mkdtempSync(join(tmpdir(), 'tollgate-system-'))
    writeFileSync(join(bin, 'id'), '#!/bin/sh\necho 1000\n')
    chmodSync(join(bin, 'id'), 0o755)
    const run = spawnSync(BASH, [SCRIPT], {
      encoding: 'utf8',
      env: { PATH: bin, CHROMIUM_PATH: '' },
    })
    expect(run.status).toBe(1)
    expect(run.stderr).toMatch(
      /^The tests need: redis-server .*memcached chromium nginx libnginx-mod-http-js haproxy openssl curl valgrind\. Install them/m,
    )
    expect(run.stderr).toContain('sudo apt-get install redis-server')
  })

  it('does nothing when every package is there (this machine, after npm test installed them)', () => {
    const run = spawnSync(BASH, [SCRIPT], { encoding: 'utf8' })
    expect(run.stderr).toBe('')
    expect(run.status).toBe(0)
  })
})
