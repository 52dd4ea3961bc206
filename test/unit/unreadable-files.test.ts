import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../src/config.js'
import { unreadable } from '../../src/config/sources.js'
import { loadConfigFrom } from '../helpers/load-config.js'

// A file the configuration names that cannot be read: its error's code and, for a relative
// path with no file, where it was looked for and from where a relative path is read.

const enoent = Object.assign(new Error('no such file'), { code: 'ENOENT' })

describe('unreadable', () => {
  it('a relative path with no file: the absolute path looked for, and the folder npm was run in when it is another', () => {
    expect(unreadable('teams.yaml', enoent, '/srv/gateway', '/srv/gateway/config')).toBe(
      'ENOENT: no file /srv/gateway/teams.yaml; a relative path is read from /srv/gateway, not from /srv/gateway/config, where npm was run; give an absolute path',
    )
    expect(unreadable('secrets/token', enoent, '/srv/gateway', '/srv/gateway')).toBe('ENOENT: no file /srv/gateway/secrets/token; a relative path is read from /srv/gateway; give an absolute path')
  })

  it('an absolute path, or another error: the code alone', () => {
    expect(unreadable('/run/secrets/none', enoent, '/srv/gateway', '/home/me')).toBe('ENOENT')
    expect(unreadable('token', Object.assign(new Error('denied'), { code: 'EACCES' }), '/srv/gateway', '/home/me')).toBe('EACCES')
  })

  // A .env line's trailing space is part of the value: the file named is not the one meant, and the line showed no sign of it.
  it('a path with spaces at its ends: says so, whatever the folder', () => {
    expect(unreadable('/run/secrets/token ', enoent, '/srv/gateway', '/home/me')).toBe('ENOENT; the path "/run/secrets/token " has spaces at its ends: remove them')
    expect(unreadable(' teams.yaml', enoent, '/srv/gateway', '/srv/gateway')).toBe('ENOENT; the path " teams.yaml" has spaces at its ends: remove them')
    expect(problemsOf({ PLATFORM_BASE_URL: 'https://dsp.example.com', PLATFORM_TOKEN: 'platform-token-abcdef123456', CONFIG_FILE: '/etc/report-gateway/config.yaml ' })).toEqual([
      'CONFIG_FILE (/etc/report-gateway/config.yaml ): cannot be read (ENOENT; the path "/etc/report-gateway/config.yaml " has spaces at its ends: remove them)',
    ])
  })

  it('names the folder in the start\'s problem of every *_FILE variable and of CONFIG_FILE', () => {
    const problems = problemsOf({ PLATFORM_BASE_URL: 'https://dsp.example.com', PLATFORM_TOKEN_FILE: 'platform-token.txt', ADMIN_TOKEN_FILE: 'admin-token.txt', CONFIG_FILE: 'settings.yaml' })
    const cwd = process.cwd()
    expect(problems).toEqual(expect.arrayContaining([expect.stringContaining(`CONFIG_FILE (settings.yaml): cannot be read (ENOENT: no file ${cwd}/settings.yaml; a relative path is read from ${cwd}`)]))
    expect(problemsOf({ PLATFORM_BASE_URL: 'https://dsp.example.com', PLATFORM_TOKEN: 'platform-token-abcdef123456', ADMIN_TOKEN_FILE: 'admin-token.txt' })).toEqual([
      `ADMIN_TOKEN_FILE: admin-token.txt cannot be read (ENOENT: no file ${cwd}/admin-token.txt; a relative path is read from ${cwd}; give an absolute path)`,
    ])
    expect(problemsOf({ PLATFORM_BASE_URL: 'https://dsp.example.com', PLATFORM_TOKEN_FILE: 'platform-token.txt' })).toEqual([
      `PLATFORM_TOKEN_FILE: platform-token.txt cannot be read (ENOENT: no file ${cwd}/platform-token.txt; a relative path is read from ${cwd}; give an absolute path); it must hold the platform token`,
    ])
  })

  it("names a named credential's token file by the variable that gave it, or by its setting", () => {
    const cwd = process.cwd()
    const config = '/virtual/config.yaml'
    const base = { PLATFORM_BASE_URL: 'https://dsp.example.com', PLATFORM_TOKEN: 'platform-token-abcdef123456', CONFIG_FILE: config }
    const unread = (path: string) => `${path} cannot be read (ENOENT: no file ${cwd}/${path}; a relative path is read from ${cwd}; give an absolute path); it must hold the platform token`
    expect(problemsOf({ ...base, CREDENTIAL_PARTNER_TOKEN_FILE: 'partner-token' }, { [config]: 'credentials:\n  partner: {}\n' })).toEqual([`CREDENTIAL_PARTNER_TOKEN_FILE: ${unread('partner-token')}`])
    expect(problemsOf(base, { [config]: 'credentials:\n  partner:\n    tokenFile: partner-token\n' })).toEqual([expect.stringContaining(`credentials.partner.tokenFile: ${unread('partner-token')}`)])
  })
})

function problemsOf(env: Record<string, string>, files: Record<string, string> = {}): string[] {
  try {
    loadConfigFrom(env, files)
  } catch (err) {
    if (err instanceof ConfigError) return err.problems
    throw err
  }
  throw new Error('the configuration loaded')
}
