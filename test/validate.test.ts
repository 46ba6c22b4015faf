import { describe, expect, it } from 'vitest'
import { describeValue, fail, oneOf, redactUrl, validateFor } from '../src/validate.js'

const messageOf = (run: () => unknown): string => {
  try {
    run()
  } catch (error) {
    expect(error).toBeInstanceOf(TypeError)
    return (error as Error).message
  }
  throw new Error('expected a TypeError')
}

describe('the option kit', () => {
  describe('fail', () => {
    it('summarizes a string by its length when the caller does not say it may be shown', () => {
      expect(messageOf(() => fail('keyPrefix', 'must be short', 'hunter2'))).toBe(
        'createGate(options): "keyPrefix" must be short (got a string of length 7)',
      )
    })

    it('shows a string the caller marks as safe to show', () => {
      expect(messageOf(() => fail('mode', 'must be on or off', 'alowed', { show: true }))).toBe(
        `createGate(options): "mode" must be on or off (got 'alowed')`,
      )
    })

    it('shows a URL without its userinfo, query or fragment', () => {
      const message = messageOf(() =>
        fail('url', 'must be https', 'http://admin:hunter2@sso.test/certs?api_key=s3cr3t#x', {
          show: 'url',
        }),
      )
      expect(message).toBe(
        `createGate(options): "url" must be https (got 'http://***@sso.test/certs?…#…')`,
      )
    })

    it('still summarizes what is not a string, even when it may be shown', () => {
      expect(messageOf(() => fail('mode', 'must be a name', 42, { show: true }))).toMatch(
        /\(got number 42\)$/,
      )
      expect(messageOf(() => fail('url', 'must be a URL', { href: 'x' }, { show: 'url' }))).toMatch(
        /\(got an object\)$/,
      )
    })

    it('leaves the value out for a rule about the option itself', () => {
      expect(messageOf(() => fail('a', 'needs "b"'))).toBe('createGate(options): "a" needs "b"')
    })
  })

  describe('oneOf', () => {
    it('shows the refused name next to the allowed ones', () => {
      expect(messageOf(() => oneOf('alowed', 'dpop.mode', ['off', 'allowed', 'required']))).toBe(
        `createGate(options): "dpop.mode" must be one of 'off', 'allowed', 'required' (got 'alowed')`,
      )
    })

    it('summarizes a refused value that is not a string', () => {
      expect(messageOf(() => oneOf(['x'], 'headers', ['draft-10', false]))).toMatch(
        /\(got an array of length 1\)$/,
      )
    })

    it('keeps the prefix of the factory it validates for', () => {
      expect(
        messageOf(() =>
          validateFor('createTokenSource(options):', () =>
            oneOf('basic', 'clientAuth', ['client_secret_basic']),
          ),
        ),
      ).toBe(
        `createTokenSource(options): "clientAuth" must be one of 'client_secret_basic' (got 'basic')`,
      )
    })
  })

  describe('describeValue', () => {
    it('escapes quotes, backslashes, control and invisible characters', () => {
      expect(describeValue("it's\\\r\n\u200b", true)).toBe(`'it\\'s\\\\\\u000d\\u000a\\u200b'`)
    })

    it('cuts text longer than 120 characters', () => {
      const shown = describeValue('a'.repeat(500), true)
      expect(shown).toBe(`'${'a'.repeat(120)}…'`)
    })
  })

  describe('redactUrl', () => {
    it.each([
      ['https://sso.test/realms/acme', 'https://sso.test/realms/acme'],
      ['https://admin:hunter2@sso.test/certs', 'https://***@sso.test/certs'],
      ['https://token@sso.test', 'https://***@sso.test'],
      ['https://a@b:hunter2@sso.test/x', 'https://***@sso.test/x'],
      ['admin:hunter2@sso.test/certs', '***@sso.test/certs'],
      ['//admin:hunter2@sso.test', '//***@sso.test'],
      ['https:admin:hunter2@sso.test', '***@sso.test'],
      ['https://sso.test/certs?key=hunter2', 'https://sso.test/certs?…'],
      ['https://sso.test/certs?', 'https://sso.test/certs?'],
      ['https://sso.test/certs#hunter2', 'https://sso.test/certs#…'],
      ['https://sso.test/users/a@b', 'https://sso.test/users/a@b'],
      ['redis://:hunter2@cache:6379', 'redis://***@cache:6379'],
    ])('shows %s as %s', (url, shown) => {
      expect(redactUrl(url)).toBe(shown)
    })
  })
})
