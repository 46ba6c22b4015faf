// The `memcached` client ships no types, and the tests only construct it, hand it to
// rate-limiter-flexible's RateLimiterMemcache and end it.
declare module 'memcached' {
  export default class Memcached {
    constructor(location: string, options?: Record<string, unknown>)
    end(): void
  }
}
