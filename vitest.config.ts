import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Loopback servers and redis-server processes: generous, but a hang still fails the run.
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // CI also writes a JSON summary, from which .ci/run prints its closing "N passed, N failed" line.
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: 'test-results.json' },
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts', 'adapters/**/*.ts'],
      reporter: ['text-summary'],
    },
  },
})
