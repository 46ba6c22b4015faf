import { afterEach, describe, expect, it, vi } from 'vitest'

import { int } from '../src/options-kit.js'

describe('option kit', () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it('shows integer bounds from 10,000 on in groups of three digits, negative ones too', () => {
    expect(int({ min: 0, max: 9999 }).doc.accepts).toBe('integer 0–9999')
    expect(int({ min: 1, max: 86_400 }).doc.accepts).toBe('integer 1–86 400')
    expect(int({ min: -12_345, max: 2_147_483_647 }).doc.accepts).toBe(
      'integer -12 345–2 147 483 647',
    )
    expect(int({ min: 1, max: Number.MAX_SAFE_INTEGER }).doc.accepts).toBe(
      'integer 1–9 007 199 254 740 991',
    )
  })

  it('builds the option tables of the whole package without toLocaleString (ICU costs an import 20 ms)', async () => {
    const localeFormat = vi.spyOn(Number.prototype, 'toLocaleString')
    const numberFormat = vi.spyOn(Intl, 'NumberFormat')
    vi.resetModules()
    await import('../src/index.js')
    expect(localeFormat).not.toHaveBeenCalled()
    expect(numberFormat).not.toHaveBeenCalled()
  })
})
