/**
 * Proves a contender really authorizes before it is timed: no token → 401, a valid token → 200,
 * a forged signature with a known kid → 401. A contender that fails aborts the run.
 */
import { request } from 'node:http'

function get(port: number, token: string | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {}
    const req = request(
      { host: '127.0.0.1', port, path: '/hello', headers, agent: false },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      },
    )
    req.setTimeout(10_000, () => req.destroy(new Error('timeout after 10 s')))
    req.on('error', reject)
    req.end()
  })
}

export async function sanityCheck(
  name: string,
  port: number,
  tokens: { valid: string; forged: string },
  bare = false,
): Promise<void> {
  // A bare framework authorizes nothing: it only has to answer the route.
  const expectations: [string, string | undefined, number][] = bare
    ? [['valid token', tokens.valid, 200]]
    : [
        ['no token', undefined, 401],
        ['valid token', tokens.valid, 200],
        ['forged signature', tokens.forged, 401],
      ]
  for (const [what, token, expected] of expectations) {
    let status: number | string
    try {
      status = await get(port, token)
    } catch (error) {
      status = (error as Error).message
    }
    if (status !== expected) {
      throw new Error(
        `sanity check failed for "${name}": ${what} answered ${status}, expected ${expected}. ` +
          'A contender that does not authorize correctly is not benchmarked; the run is aborted.',
      )
    }
  }
}
