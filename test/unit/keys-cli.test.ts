import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { beforeAll, describe, expect, it } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { ensureBuilt } from '../helpers/dist.js'

// Contract, "Teams": the key command prints the key once and the sha256: line to put
// in the config. Run as operators run it: the built CLI in a child process.

const CLI = fileURLToPath(new URL('../../dist/cli/keys.js', import.meta.url))

function run(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  return runIn({}, ...args)
}

function runIn(env: Record<string, string>, ...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 10_000, env: { PATH: process.env.PATH ?? '', ...env } })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

const sha256 = (s: string) => `sha256:${createHash('sha256').update(s, 'utf8').digest('hex')}`

beforeAll(() => ensureBuilt(CLI), 130_000)

function withFile(text: string, test: (path: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'rgw-keys-list-'))
  try {
    const path = join(dir, 'config.yaml')
    writeFileSync(path, text)
    test(path)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

describe('keys new --team NAME', () => {
  it('prints a new key once and the config lines holding its hash', () => {
    const { status, stdout, stderr } = run('new', '--team', 'growth', '--advertisers', '101,102')
    expect(status).toBe(0)
    expect(stderr).toBe('')
    const keys = stdout.match(/rgw_[A-Za-z0-9_-]{43}/g) ?? []
    expect(keys).toHaveLength(1)
    const key = keys[0] as string
    expect(stdout).toContain(`API key for team growth`)
    // The printed config snippet is YAML that names the team and holds the key's hash.
    const snippet = stdout.slice(stdout.indexOf('teams:'))
    const teams = (parseYaml(snippet) as { teams: Record<string, { keys: string[] }> }).teams
    expect(teams).toEqual({ growth: { keys: [sha256(key)], advertisers: [101, 102] } })
    expect(stdout.match(/sha256:[0-9a-f]{64}/g)).toEqual([sha256(key)])
  })

  it('prints a snippet that passes the config validation when pasted as it is', () => {
    for (const args of [['new', '--team', 'growth'], ['new', '--team', 'ops', '--advertisers', '*']]) {
      const { status, stdout } = run(...args)
      expect(status).toBe(0)
      withFile(stdout.slice(stdout.indexOf('teams:')), (path) => {
        const listed = run('list', '--config', path)
        expect(listed.stderr).toBe('')
        expect(listed.status).toBe(0)
        expect(listed.stdout.split('\n')[1]).toMatch(new RegExp(`^${args[2]}\\s`))
      })
    }
  })

  it('makes a different key every time', () => {
    const a = run('new', '--team', 'growth').stdout.match(/rgw_\S+/)?.[0]
    const b = run('new', '--team', 'growth').stdout.match(/rgw_\S+/)?.[0]
    expect(a).toBeDefined()
    expect(a).not.toBe(b)
  })

  it('refuses a missing or unusable team name in one line with exit code 2', () => {
    for (const args of [['new'], ['new', '--team', 'bad name'], ['new', '--team', 'a/b']]) {
      const r = run(...args)
      expect(r.status).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr).toMatch(/^keys: new: --team NAME is required .*\n$/)
      expect(r.stderr.split('\n')).toHaveLength(2)
    }
  })

  it('refuses an option without its value or a bad advertiser list in one line, no stack trace', () => {
    for (const args of [['new', '--team'], ['new', '--team', 'growth', '--advertisers', 'abc'], ['new', '--team', 'growth', '--advertisers'], ['list', '--config'], ['new', '--frobnicate']]) {
      const r = run(...args)
      expect(r.status, args.join(' ')).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr).toMatch(/^keys: .*\(npm run keys -- --help\)\n$/)
      expect(r.stderr).not.toMatch(/\n\s+at |node:internal|Error/)
    }
  })
})

describe('keys hash KEY', () => {
  it('prints the sha256: line of an existing key, the same the new command printed', () => {
    const created = run('new', '--team', 'ops').stdout
    const key = created.match(/rgw_[A-Za-z0-9_-]{43}/)?.[0] as string
    const printedHash = created.match(/sha256:[0-9a-f]{64}/)?.[0]
    const { status, stdout } = run('hash', key)
    expect(status).toBe(0)
    expect(stdout).toBe(`${printedHash}\n`)
    expect(stdout.trim()).toBe(sha256(key))
  })

  it('hashes a known token to its known digest', () => {
    expect(run('hash', 'abcdefghijklmnop').stdout).toBe(`${sha256('abcdefghijklmnop')}\n`)
  })

  // Issue 16 item 7: named admin tokens get ADMIN_TOKEN's minimum where their hash is made.
  it('refuses a token shorter than 16 characters, giving the rule and never the token', () => {
    for (const token of ['abc', 'short-pass-15ch', 'x']) {
      const r = run('hash', token)
      expect(r.status).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr).toBe('keys: hash: a token must be at least 16 characters long (npm run keys -- --help)\n')
      expect(r.stderr).not.toContain(token)
    }
  })

  it('answers a usage mistake in one line with exit code 2', () => {
    for (const args of [[], ['hash'], ['rotate'], ['hash', 'a-token-long-enough', 'extra']]) {
      const r = run(...args)
      expect(r.status).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr).toMatch(/^keys: [^\n]+\n$/)
    }
  })

  it('prints its usage on --help, exit 0', () => {
    for (const args of [['--help'], ['-h'], ['new', '--help']]) {
      const r = run(...args)
      expect(r.status).toBe(0)
      expect(r.stderr).toBe('')
      expect(r.stdout).toMatch(/^usage:\n {2}npm run keys -- new --team NAME/)
    }
  })
})

describe('keys list', () => {
  const growth = sha256('rgw_list_growth_key')
  const old = sha256('rgw_list_old_key')
  const ops = sha256('rgw_list_ops_key')
  const YAML = `teams:
  growth:
    keys:
      - { hash: "${growth}", id: growth-2026, expiresAt: 2099-01-01 }
      - { hash: "${old}", id: growth-2020, expiresAt: 2020-01-01 }
    advertisers: [101]
  ops:
    keys: ["${ops}"]
    advertisers: ["*"]
  idle:
    keys: []
    advertisers: ["*"]
`

  it('prints teams, key ids, fingerprints and expiry, from --config or CONFIG_FILE', () => {
    withFile(YAML, (path) => {
      const r = run('list', '--config', path)
      expect(r.status).toBe(0)
      expect(r.stdout.split('\n').map((l) => l.split(/\s{2,}/))).toEqual([
        ['TEAM', 'KEY ID', 'FINGERPRINT', 'EXPIRES'],
        ['growth', 'growth-2026', growth.slice(7, 19), '2099-01-01T00:00:00.000Z'],
        ['growth', 'growth-2020', old.slice(7, 19), '2020-01-01T00:00:00.000Z (EXPIRED)'],
        ['ops', ops.slice(7, 19), ops.slice(7, 19), 'never'],
        ['idle', '-', '-', 'no keys'],
        [''],
      ])
      expect(r.stdout).not.toContain(growth.slice(19))
      expect(runIn({ CONFIG_FILE: path }, 'list').stdout).toBe(r.stdout)
    })
  })

  it('names the problems of an invalid file, never a pasted key, and exits 1', () => {
    withFile('teams:\n  growth:\n    keys: ["rgw_pasted_plaintext_key"]\n    advertisers: ["*"]\n', (path) => {
      const r = run('list', '--config', path)
      expect(r.status).toBe(1)
      expect(r.stderr).toMatch(/teams\.growth\.keys\.0/)
      expect(r.stderr).not.toContain('rgw_pasted_plaintext_key')
    })
  })

  it('reads a teams file (--teams, or TEAMS_FILE before CONFIG_FILE) with the gateway\'s rules for it', () => {
    withFile(YAML, (path) => {
      const expected = run('list', '--config', path).stdout
      expect(run('list', '--teams', path).stdout).toBe(expected)
      withFile('teams: {}\n', (other) => {
        // TEAMS_FILE holds the teams when it is set: CONFIG_FILE then declares none.
        const r = runIn({ TEAMS_FILE: path, CONFIG_FILE: other }, 'list')
        expect(r.status).toBe(0)
        expect(r.stdout).toBe(expected)
      })
    })
    withFile(`${YAML}cache:\n  ttl: { recent: 1m }\n`, (path) => {
      const r = runIn({ TEAMS_FILE: path }, 'list')
      expect(r.status).toBe(1)
      expect(r.stderr).toBe(`keys list: ${path} is not valid:\n  - TEAMS_FILE (${path}): cache: not a teams setting; only teams: belongs in TEAMS_FILE (set cache in CONFIG_FILE)\n`)
      // The same file as a config file: its teams are what counts.
      expect(run('list', '--config', path).status).toBe(0)
    })
  })

  it('asks for a file when there is none, and for one file at a time', () => {
    const r = run('list')
    expect(r.status).toBe(2)
    expect(r.stderr).toBe('keys: list: give --teams FILE or --config FILE, or set TEAMS_FILE or CONFIG_FILE (npm run keys -- --help)\n')
    const both = run('list', '--teams', 'a.yaml', '--config', 'b.yaml')
    expect(both.status).toBe(2)
    expect(both.stderr).toBe('keys: list: give --teams FILE or --config FILE, not both (npm run keys -- --help)\n')
  })
})
