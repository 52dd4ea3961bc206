import { describe, expect, it } from 'vitest'
import { SEARCHED_LOGIN_SECRET_CHARS, searchedLoginSecret, shortLoginSecretWarnings } from '../../src/config/login-secrets.js'
import { loadConfigFrom } from '../helpers/load-config.js'

const LOGIN = { PLATFORM_BASE_URL: 'https://platform.example.com', PLATFORM_USERNAME: 'ops@example.com', PLATFORM_CLIENT_ID: '2' }

describe('which login passwords and client secrets requests are searched for', () => {
  it('searches for one of 20 characters or more, and for no shorter one', () => {
    expect(SEARCHED_LOGIN_SECRET_CHARS).toBe(20)
    expect(searchedLoginSecret('x'.repeat(19))).toBe(false)
    expect(searchedLoginSecret('x'.repeat(20))).toBe(true)
  })

  it('warns of each one left out, naming its setting and variable and never its value', () => {
    const warnings = shortLoginSecretWarnings([
      { name: 'default', login: { password: 'Summer2026', clientSecret: 'k'.repeat(40) } },
      { name: 'partner-eu', login: { password: 'p'.repeat(24), clientSecret: 'Acme-client-1' } },
      { name: 'reader', login: null },
    ])
    expect(warnings).toHaveLength(2)
    expect(warnings[0]).toMatch(/^platform\.password \(PLATFORM_PASSWORD\) is shorter than 20 characters: a team may write it .* its team neither refused nor suspended .*limits\.secretSuspension/)
    expect(warnings[1]).toMatch(/^credentials\.partner-eu\.clientSecret \(CREDENTIAL_PARTNER_EU_CLIENT_SECRET\) is shorter than 20 characters/)
    for (const warning of warnings) for (const value of ['Summer2026', 'Acme-client-1']) expect(warning).not.toContain(value)
  })

  it('keeps a short one out of the secrets searched for, scrubbed from the log, and said at start', () => {
    const short = loadConfigFrom({ ...LOGIN, PLATFORM_PASSWORD: 'Summer2026', PLATFORM_CLIENT_SECRET: 'c'.repeat(40) })
    expect(short.secrets).not.toContain('Summer2026')
    expect(short.secrets).toContain('c'.repeat(40))
    expect(short.shortLoginSecrets).toEqual(['Summer2026'])
    expect(short.scrubbedSecrets).not.toContain('Summer2026')
    expect(short.warnings.filter((w) => w.startsWith('platform.password (PLATFORM_PASSWORD) is shorter'))).toHaveLength(1)
    const long = loadConfigFrom({ ...LOGIN, PLATFORM_PASSWORD: 'a-password-of-24-chars!!', PLATFORM_CLIENT_SECRET: 'c'.repeat(40) })
    expect(long.secrets).toContain('a-password-of-24-chars!!')
    expect(long.warnings.some((w) => w.includes('is shorter than 20 characters'))).toBe(false)
  })
})
