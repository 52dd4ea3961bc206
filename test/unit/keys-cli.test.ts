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

describe('keys new --team NAME', () => {
  it('prints a new key once and the config lines holding its hash', () => {
    const { status, stdout, stderr } = run('new', '--team', 'growth')
    expect(status).toBe(0)
    expect(stderr).toBe('')
    const keys = stdout.match(/rgw_[A-Za-z0-9_-]{43}/g) ?? []
    expect(keys).toHaveLength(1)
    const key = keys[0] as string
    expect(stdout).toContain(`API key for team growth`)
    // The printed config snippet is YAML that names the team and holds the key's hash.
    const snippet = stdout.slice(stdout.indexOf('teams:'))
    const teams = (parseYaml(snippet) as { teams: Record<string, { keys: string[] }> }).teams
    expect(teams).toEqual({ growth: { keys: [sha256(key)] } })
    expect(stdout.match(/sha256:[0-9a-f]{64}/g)).toEqual([sha256(key)])
  })

  it('makes a different key every time', () => {
    const a = run('new', '--team', 'growth').stdout.match(/rgw_\S+/)?.[0]
    const b = run('new', '--team', 'growth').stdout.match(/rgw_\S+/)?.[0]
    expect(a).toBeDefined()
    expect(a).not.toBe(b)
  })

  it('refuses a missing or unusable team name with usage and exit code 2', () => {
    for (const args of [['new'], ['new', '--team', 'bad name'], ['new', '--team', 'a/b']]) {
      const r = run(...args)
      expect(r.status).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr).toContain('--team NAME is required')
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

  it('hashes a known key to its known digest', () => {
    expect(run('hash', 'abc').stdout).toBe('sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n')
  })

  it('prints usage with exit code 2 for no or an unknown command', () => {
    for (const args of [[], ['hash'], ['rotate']]) {
      const r = run(...args)
      expect(r.status).toBe(2)
      expect(r.stderr).toMatch(/^usage:/)
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

  it('asks for a file when there is none', () => {
    const r = run('list')
    expect(r.status).toBe(2)
    expect(r.stderr).toContain('give --config FILE or set CONFIG_FILE')
  })
})
