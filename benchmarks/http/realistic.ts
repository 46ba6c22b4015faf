/**
 * The `realistic` token mode (issue 14): 1,000 clients, each reusing its token for 50–150
 * requests (100 on average) before renewing it, requests coming from clients picked at random.
 * About 99% of requests present a token already seen (a cache hit), with a steady trickle of new
 * tokens (a miss each). The schedule is seeded, so every contender gets the same sequence.
 */
export const REALISTIC_CLIENTS = 1000
const MIN_USES = 50
const MAX_USES = 150

export interface RealisticSchedule {
  /** Token index per request: `client * generations + generation`. */
  schedule: number[]
  /** Tokens each client needs (its generations), so `clients × generations` tokens in all. */
  generations: number
  /** Share of the schedule's requests that present a token for the first time. */
  renewalRate: number
}

/** xorshift32: a few lines, seeded, the same on every run. */
function random(seed: number): () => number {
  let state = seed >>> 0 || 1
  return () => {
    state ^= state << 13
    state >>>= 0
    state ^= state >>> 17
    state ^= state << 5
    state >>>= 0
    return state / 0x1_0000_0000
  }
}

/**
 * A schedule of `length` requests. A client never comes back to an old token: `generations` is
 * as many as the busiest client needs.
 */
export function realisticSchedule(length: number, clients = REALISTIC_CLIENTS): RealisticSchedule {
  const next = random(0x7011_6a7e)
  const uses = () => MIN_USES + Math.floor(next() * (MAX_USES - MIN_USES + 1))
  const generation = new Array<number>(clients).fill(0)
  const left = Array.from({ length: clients }, uses)
  const picks: number[] = []
  const picked: number[] = []
  let renewals = clients
  for (let n = 0; n < length; n++) {
    const client = Math.floor(next() * clients)
    if (left[client] === 0) {
      generation[client]!++
      left[client] = uses()
      renewals++
    }
    left[client]!--
    picks.push(client)
    picked.push(generation[client]!)
  }
  const generations = Math.max(...generation) + 1
  const schedule = picks.map((client, n) => client * generations + picked[n]!)
  return { schedule, generations, renewalRate: renewals / length }
}
