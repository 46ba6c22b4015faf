/**
 * How much of the address space a list of trusted proxies covers, as the clients that connect see
 * it: an IPv4 client arrives as `10.0.0.5` or, on a dual-stack socket, as `::ffff:10.0.0.5`, and
 * `node:net`'s `BlockList` matches either form against IPv4 rules and IPv4-mapped IPv6 rules alike
 * (`::ffff:0.0.0.0/96` and `::/1` both hold every IPv4 client). So each entry is counted once in
 * the space of IPv4 clients (its IPv4 part, or its IPv4-mapped part) and once in the space of
 * IPv6 clients (what is left of it), and the two spaces are judged on their own.
 *
 * @module
 */

/** An inclusive range of addresses, as integers (32 bits for IPv4, 128 for IPv6). */
interface Span {
  readonly start: bigint
  readonly end: bigint
}

/** `::ffff:0.0.0.0/96`: the IPv4-mapped IPv6 addresses, which are IPv4 clients. */
const MAPPED: Span = { start: 0xffffn << 32n, end: (0xffffn << 32n) | 0xffff_ffffn }

/**
 * Every IPv4 address a client can connect from: 0.0.0.0 to 223.255.255.255 (224.0.0.0/4 is
 * multicast and 240.0.0.0/4 reserved; neither opens a TCP connection). Ranges that hold all of it
 * trust every IPv4 client, even if they leave out the rest.
 */
const IPV4_CLIENTS: Span = { start: 0n, end: 0xdfff_ffffn }

/**
 * Every IPv6 address the internet routes to clients: global unicast, `2000::/3`. Ranges that
 * hold all of it trust every IPv6 client on the internet.
 */
const IPV6_CLIENTS: Span = { start: 0x2n << 124n, end: (0x4n << 124n) - 1n }

/** Loopback, which no remote client connects from: not counted in the width of the ranges. */
const IPV4_LOOPBACK: Span = { start: 0x7f00_0000n, end: 0x7fff_ffffn }
const IPV6_LOOPBACK: Span = { start: 1n, end: 1n }

/**
 * Past these widths the ranges hold far more than a proxy tier: more addresses than one IPv4
 * `/8` (16,777,216) or one IPv6 `/32` (2^96), loopback not counted.
 */
export const WIDE_IPV4 = 1n << 24n
export const WIDE_IPV6 = 1n << 96n

/** What a list of proxies' ranges covers, in each family's space of clients. */
export interface Coverage {
  /** The ranges hold every IPv4 client (as IPv4 or IPv4-mapped IPv6). */
  readonly everyIpv4Client: boolean
  /** The ranges hold every IPv6 client of the internet (`2000::/3`). */
  readonly everyIpv6Client: boolean
  /** How many IPv4 client addresses they hold, loopback not counted. */
  readonly ipv4Width: bigint
  /** How many IPv6 client addresses they hold, IPv4-mapped and loopback not counted. */
  readonly ipv6Width: bigint
}

/** One validated entry: an address (`prefix` the family's full length) or a CIDR range. */
export interface AddressRange {
  readonly address: string
  readonly family: 4 | 6
  readonly prefix: number
}

function ipv4Number(address: string): bigint {
  let value = 0n
  for (const part of address.split('.')) value = (value << 8n) | BigInt(Number(part))
  return value
}

/** An IPv6 address (validated by `isIP` already; a `%zone` is dropped) as a 128-bit integer. */
function ipv6Number(text: string): bigint {
  const address = text.split('%')[0] ?? ''
  const [head = '', tail] = address.split('::')
  const groups = (part: string | undefined): bigint[] => {
    if (part === undefined || part === '') return []
    return part.split(':').flatMap((group) => {
      if (!group.includes('.')) return [BigInt(`0x${group}`)]
      // An IPv4 tail (`::ffff:10.0.0.5`) is the last two groups.
      const v4 = ipv4Number(group)
      return [v4 >> 16n, v4 & 0xffffn]
    })
  }
  const first = groups(head)
  const last = groups(tail)
  const all =
    tail === undefined
      ? first
      : [...first, ...Array(8 - first.length - last.length).fill(0n), ...last]
  return all.reduce((value, group) => (value << 16n) | group, 0n)
}

function spanOf({ address, family, prefix }: AddressRange): Span {
  const bits = family === 4 ? 32n : 128n
  const value = family === 4 ? ipv4Number(address) : ipv6Number(address)
  const host = (1n << (bits - BigInt(prefix))) - 1n
  const start = value & ~host
  return { start, end: start | host }
}

/** The spans sorted and merged where they touch or overlap. */
function merged(spans: readonly Span[]): Span[] {
  const sorted = [...spans].sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0))
  const out: Span[] = []
  for (const span of sorted) {
    const last = out.at(-1)
    if (last !== undefined && span.start <= last.end + 1n) {
      if (span.end > last.end) out[out.length - 1] = { start: last.start, end: span.end }
    } else {
      out.push(span)
    }
  }
  return out
}

function overlap(a: Span, b: Span): Span | undefined {
  const start = a.start > b.start ? a.start : b.start
  const end = a.end < b.end ? a.end : b.end
  return start <= end ? { start, end } : undefined
}

const width = (span: Span): bigint => span.end - span.start + 1n

/** How many addresses of `spans` (merged) fall outside each of `excluded` (disjoint spans). */
function widthWithout(spans: readonly Span[], excluded: readonly Span[]): bigint {
  let total = 0n
  for (const span of spans) {
    total += width(span)
    for (const out of excluded) {
      const both = overlap(span, out)
      if (both !== undefined) total -= width(both)
    }
  }
  return total
}

const holds = (spans: readonly Span[], target: Span): boolean =>
  spans.some((span) => span.start <= target.start && span.end >= target.end)

/** What `ranges` cover of the IPv4 clients and of the IPv6 clients. */
export function coverageOf(ranges: readonly AddressRange[]): Coverage {
  const ipv4: Span[] = []
  const ipv6: Span[] = []
  for (const range of ranges) {
    const span = spanOf(range)
    if (range.family === 4) {
      ipv4.push(span)
      continue
    }
    const mapped = overlap(span, MAPPED)
    if (mapped !== undefined) {
      ipv4.push({ start: mapped.start - MAPPED.start, end: mapped.end - MAPPED.start })
    }
    ipv6.push(span)
  }
  const v4 = merged(ipv4)
  const v6 = merged(ipv6)
  return {
    everyIpv4Client: holds(v4, IPV4_CLIENTS),
    everyIpv6Client: holds(v6, IPV6_CLIENTS),
    ipv4Width: widthWithout(v4, [IPV4_LOOPBACK]),
    ipv6Width: widthWithout(v6, [MAPPED, IPV6_LOOPBACK]),
  }
}
