import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { beforeAll, describe, expect, it } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { keysCommand } from '../../src/cli/keys-command.js'
import { teamsOfFile } from '../../src/config/teams-file.js'
import { ensureBuilt } from '../helpers/dist.js'

// Contract, "Teams": the key command prints the key once and the sha256: line to put
// in the config. The command runs here on captured output and a given environment; the
// last tests run it as operators do, the built CLI in a child process.

const CLI = fileURLToPath(new URL('../../dist/cli/keys.js', import.meta.url))

interface Ran {
  status: number | null
  stdout: string
  stderr: string
}

function run(...args: string[]): Ran {
  return runIn({}, ...args)
}

function runIn(env: Record<string, string>, ...args: string[]): Ran {
  let stdout = ''
  let stderr = ''
  const status = keysCommand(args, { out: (text) => (stdout += text), err: (text) => (stderr += text), env })
  return { status, stdout, stderr }
}

/** The built CLI in a child process, as `npm run keys -- …` runs it. */
function spawnCli(env: Record<string, string>, ...args: string[]): Ran {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 10_000, env: { PATH: process.env.PATH ?? '', ...env } })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

const sha256 = (s: string) => `sha256:${createHash('sha256').update(s, 'utf8').digest('hex')}`

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
    expect(stdout).toMatch(/^API key [0-9a-f]{12} for team growth /)
    // The printed config snippet is YAML that names the team and holds the key's hash.
    const snippet = stdout.slice(stdout.indexOf('teams:'))
    const teams = (parseYaml(snippet) as { teams: Record<string, { keys: { createdAt: string }[] }> }).teams
    // Its entry says when it was made: the key's life starts there (GET /admin/keys).
    expect(teams).toEqual({ growth: { keys: [{ hash: sha256(key), createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/) }], advertisers: [101, 102] } })
    expect(Math.abs(Date.parse(teams.growth!.keys[0]!.createdAt) - Date.now())).toBeLessThan(60_000)
    expect(stdout.match(/sha256:[0-9a-f]{64}/g)).toEqual([sha256(key)])
  })

  it('names the key by the id that rotate and remove take (--key ID): its --id, else the one the gateway gives it', () => {
    const named = run('new', '--team', 'growth', '--id', 'growth-1')
    expect(named.stdout).toContain('API key growth-1 for team growth (shown once')
    const unnamed = run('new', '--team', 'growth')
    const key = (unnamed.stdout.match(/rgw_[A-Za-z0-9_-]{43}/) ?? [])[0] as string
    const id = sha256(key).slice('sha256:'.length, 'sha256:'.length + 12)
    expect(unnamed.stdout).toContain(`API key ${id} for team growth (shown once`)
    withFile(unnamed.stdout.slice(unnamed.stdout.indexOf('teams:')), (path) => {
      expect(run('list', '--config', path).stdout).toMatch(new RegExp(`^growth +${id} `, 'm'))
      expect(run('rotate', '--config', path, '--key', id, '--grace', '7d').status).toBe(0)
    })
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

  it('refuses a missing or unusable team name in one line with exit code 2, saying which characters a name may have', () => {
    const missing = run('new')
    expect(missing.status).toBe(2)
    expect(missing.stdout).toBe('')
    expect(missing.stderr).toBe('keys: new: --team NAME is required (letters, digits, _ . - only, 64 at most, not . or ..) (npm run keys -- --help)\n')
    for (const name of ['bad name', 'a/b', '<b>x</b>']) {
      const r = run('new', '--team', name)
      expect(r.status).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr).toBe(`keys: new: --team ${JSON.stringify(name)} is not a valid team name (letters, digits, _ . - only, 64 at most, not . or ..) (npm run keys -- --help)\n`)
    }
  })

  // npm takes the options before `--` for its own: `npm run keys new --team x` runs `new x`.
  it('answers `new` followed by a word (an option npm kept for itself) by saying to put -- after npm run keys', () => {
    for (const args of [['new', 'x'], ['new', 'x', '101,102']]) {
      const r = run(...args)
      expect(r.status, args.join(' ')).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr).toBe('keys: new: got "x" where only options belong: npm keeps the options before -- for itself; put -- after npm run keys: npm run keys -- new --team NAME (npm run keys -- --help)\n')
    }
  })

  // The options reached the CLI (npm kept none): a word among them is a value split at a
  // space, as `--advertisers 101, 102` is in a shell: that is what to fix, not the --.
  it('answers a word after options that arrived by naming the option whose value a space split', () => {
    const split = run('new', '--team', 'growth', '--advertisers', '101,', '102')
    expect([split.status, split.stdout]).toEqual([2, ''])
    expect(split.stderr).toBe('keys: new: got "102" after --advertisers "101,": an option\'s value ends at a space; write the list without spaces (--advertisers 101,102) or quote it (npm run keys -- --help)\n')
    const stray = run('new', '--team', 'growth', 'x')
    expect([stray.status, stray.stdout]).toEqual([2, ''])
    expect(stray.stderr).toBe('keys: new: got "x" among the options: new takes options only (--team NAME, --advertisers LIST, --id ID, --expires WHEN); an option\'s value ends at a space, so quote a value that holds one (npm run keys -- --help)\n')
  })

  // `--write` edits the file for rotate and remove; with new it was taken and nothing was
  // written, so an operator who ran `new --write` (or `--teams FILE`) took the file as done.
  it('refuses the options of rotate and remove, saying that new prints the lines and writes no file; no key is printed', () => {
    for (const [option, ...rest] of [['--write'], ['--teams', 'teams.yaml'], ['--config', 'values.yaml'], ['--key', 'growth-1'], ['--grace', '7d']] as [string, ...string[]][]) {
      const r = run('new', '--team', 'growth', option, ...rest)
      expect(r.status, option).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr).toBe(`keys: new: ${option} is not an option of new (it is rotate's and remove's); new writes no file: it prints the key and the lines to add to your TEAMS_FILE or CONFIG_FILE (npm run keys -- --help)\n`)
    }
  })

  it('refuses an advertiser list with an empty item or an item that is no advertiser id, naming the list', () => {
    const rule = 'give advertiser ids (positive integers) separated by commas, or * (npm run keys -- --help)\n'
    for (const list of ['101,,102', '101,', ',101', '']) {
      const r = run('new', '--team', 'growth', '--advertisers', list)
      expect(r.status, list).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr).toBe(`keys: new: --advertisers ${JSON.stringify(list)} holds an empty item; ${rule}`)
    }
    for (const [list, item] of [['101,abc', 'abc'], ['1.5', '1.5'], ['101,-3', '-3'], ['0', '0'], ['101,99999999999999999', '99999999999999999']]) {
      const r = run('new', '--team', 'growth', '--advertisers', list!)
      expect(r.status, list).toBe(2)
      expect(r.stderr).toBe(`keys: new: --advertisers ${JSON.stringify(list)} holds ${JSON.stringify(item)}, not an advertiser id; ${rule}`)
    }
    // "*" beside ids is refused as the teams config refuses it: it was printed as ["*"], every advertiser.
    for (const list of ['*,101', '101, *']) {
      const r = run('new', '--team', 'growth', '--advertisers', list)
      expect(r.status, list).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr).toBe(`keys: new: --advertisers ${JSON.stringify(list)} holds * (every advertiser) beside advertiser ids; give the ids, or * alone (npm run keys -- --help)\n`)
    }
    const spaced = run('new', '--team', 'growth', '--advertisers', '101, 102,101')
    expect(spaced.status).toBe(0)
    expect(spaced.stdout).toContain('advertisers: [101, 102]\n')
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

describe('keys new --id ID --expires WHEN', () => {
  const DAY = 86_400_000
  /** The printed snippet's key entry, read as YAML. */
  const entryOf = (stdout: string) => {
    const teams = (parseYaml(stdout.slice(stdout.indexOf('teams:'))) as { teams: Record<string, { keys: unknown[] }> }).teams
    return Object.values(teams)[0]!.keys[0] as { hash: string; id?: string; expiresAt?: string }
  }

  it('writes the key id and its end (an ISO date-time) into the printed entry, which keys list accepts as it is', () => {
    const before = Date.now()
    const r = run('new', '--team', 'growth', '--id', 'growth-2027', '--expires', '90d', '--advertisers', '101')
    expect(r.status).toBe(0)
    expect(r.stderr).toBe('')
    const key = r.stdout.match(/rgw_[A-Za-z0-9_-]{43}/)?.[0] as string
    const entry = entryOf(r.stdout)
    expect(entry).toEqual({ hash: sha256(key), id: 'growth-2027', createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/), expiresAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/) })
    const at = Date.parse(entry.expiresAt!)
    // Rounded up to the second.
    expect(at).toBeGreaterThanOrEqual(before + 90 * DAY)
    expect(at).toBeLessThan(Date.now() + 90 * DAY + 1000)
    withFile(r.stdout.slice(r.stdout.indexOf('teams:')), (path) => {
      for (const listed of [run('list', '--teams', path), run('list', '--config', path)]) {
        expect(listed.stderr).toBe('')
        expect(listed.status).toBe(0)
        expect(listed.stdout.split('\n')[1]!.split(/\s{2,}/)).toEqual(['growth', 'growth-2027', sha256(key).slice(7, 19), new Date(at).toISOString()])
      }
    })
  })

  it('takes durations in hours, days and weeks, and dates and date-times as the teams config reads them', () => {
    const cases: [string, (now: number) => number][] = [
      ['12h', (now) => now + 12 * 3_600_000],
      ['2w', (now) => now + 14 * DAY],
      ['2099-03-01', () => Date.parse('2099-03-01T00:00:00Z')],
      ['2099-03-01T12:00:00+02:00', () => Date.parse('2099-03-01T10:00:00Z')],
      ['2099-03-01 12:30', () => Date.parse('2099-03-01T12:30:00Z')],
    ]
    for (const [when, expected] of cases) {
      const before = Date.now()
      const r = run('new', '--team', '007', '--expires', when)
      expect(r.status, when).toBe(0)
      const at = Date.parse(entryOf(r.stdout).expiresAt!)
      expect(at, when).toBeGreaterThanOrEqual(expected(before))
      expect(at, when).toBeLessThan(expected(Date.now()) + 1000)
      expect(entryOf(r.stdout).id, when).toBeUndefined()
      // A team named by digits alone is quoted: YAML would read it as a number.
      withFile(r.stdout.slice(r.stdout.indexOf('teams:')), (path) => {
        const listed = run('list', '--teams', path)
        expect(listed.status, when).toBe(0)
        expect(listed.stdout.split('\n')[1]!.split(/\s{2,}/)[0], when).toBe('007')
      })
    }
  })

  it('quotes an id YAML would read as something else, and keys list reads it back', () => {
    const r = run('new', '--team', 'growth', '--id', '1.50')
    expect(r.status).toBe(0)
    expect(entryOf(r.stdout).id).toBe('1.50')
    expect(entryOf(r.stdout).expiresAt).toBeUndefined()
    withFile(r.stdout.slice(r.stdout.indexOf('teams:')), (path) => {
      expect(run('list', '--config', path).stdout.split('\n')[1]).toMatch(/^growth {2}1\.50 /)
    })
  })

  it('refuses an id a key id may not be, and an end that is invalid or not in the future, naming the value', () => {
    for (const id of ['a b', '<b>x</b>', 'x'.repeat(65), '']) {
      const r = run('new', '--team', 'growth', '--id', id)
      expect(r.status, id).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr).toBe(`keys: new: --id ${JSON.stringify(id)} is not a valid key id: letters, digits, _ . - (at most 64) (npm run keys -- --help)\n`)
    }
    for (const when of ['tomorrow', '90', '-1d', '2027-02-30', '2027-13-01', '2027-03-01T25:00', '']) {
      const r = run('new', '--team', 'growth', `--expires=${when}`)
      expect(r.status, when).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr).toBe(`keys: new: --expires ${JSON.stringify(when)} is neither a duration from now (90d, 12h, 2w) nor an ISO date or date-time (2027-03-01, 2027-03-01T12:00:00Z) (npm run keys -- --help)\n`)
    }
    for (const [when, at] of [['2020-01-01', '2020-01-01T00:00:00Z'], ['2026-01-01T08:00:00+01:00', '2026-01-01T07:00:00Z']]) {
      const r = run('new', '--team', 'growth', '--expires', when!)
      expect(r.status, when).toBe(2)
      expect(r.stderr).toBe(`keys: new: --expires ${JSON.stringify(when)} is not in the future (${at}) (npm run keys -- --help)\n`)
    }
    const zero = run('new', '--team', 'growth', '--expires', '0d')
    expect(zero.status).toBe(2)
    expect(zero.stderr).toMatch(/^keys: new: --expires "0d" is not in the future \(/)
  })

  it('names both options in its usage', () => {
    const r = run('--help')
    expect(r.stdout).toContain('npm run keys -- new --team NAME [--advertisers LIST] [--id ID] [--expires WHEN]')
    expect(r.stdout).toContain('90d, 12h, 2w')
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

  // Named admin tokens get ADMIN_TOKEN's minimum where their hash is made.
  it('refuses a token shorter than 16 characters, giving the rule and never the token', () => {
    for (const token of ['abc', 'short-pass-15ch', 'x']) {
      const r = run('hash', token)
      expect(r.status).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr).toBe('keys: hash: a token must be at least 16 characters long (npm run keys -- --help)\n')
      expect(r.stderr).not.toContain(token)
    }
  })

  // An admin token is read after `Bearer ` with no space in it, and a team key as header
  // bytes: one holding `Bearer ` (a header's value pasted whole), a space or a typographic
  // quote is no token a caller sends, and the line made of it would match no call. Refused
  // as ADMIN_TOKEN and its file refuse it, by the same rule.
  it('refuses a token no authorization header carries, naming what to give and never the token', () => {
    const cases: [string, string][] = [
      ['Bearer abcdefghijklmnopqrst', 'starts with "Bearer "'],
      ['bearer abcdefghijklmnopqrst', 'starts with "Bearer "'],
      ['abcdefghij klmnopqrst', 'holds a space'],
      ['\u201cabcdefghijklmnopqrst\u201d', 'holds a space or a character outside printable ASCII'],
      ['abcdefghijklmnopqrst\n', 'holds control characters'],
    ]
    for (const [token, fault] of cases) {
      const r = run('hash', token)
      expect(r.status, token).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr).toContain(`keys: hash: the token ${fault}`)
      expect(r.stderr).toMatch(/it must hold the (token|secret) alone \(the content is not shown\)/)
      expect(r.stderr).toMatch(/^keys: [^\n]+\n$/)
      expect(r.stderr).not.toContain('abcdefghij')
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

  it('says what a team\'s advertisers may be, in the gateway\'s words, one line each', () => {
    const allowed = 'must be an advertiser id (a whole number, at least 1), or "*" alone for every advertiser'
    for (const [advertisers, problem] of [
      ['["all"]', `teams.growth.advertisers.0: ${allowed} (got "all")`],
      ['[0]', `teams.growth.advertisers.0: ${allowed} (got 0)`],
      ['["*", 101]', 'teams.growth.advertisers: "*" (every advertiser) is listed beside advertiser ids (101); give ["*"] alone, or the ids alone'],
    ] as const) {
      withFile(`teams:\n  growth:\n    keys: []\n    advertisers: ${advertisers}\n`, (path) => {
        const r = run('list', '--teams', path)
        expect(r.status).toBe(1)
        expect(r.stderr).toBe(`keys list: ${path} is not valid:\n  - ${problem}\n`)
      })
    }
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

  it('refuses a team whose name holds other characters than a name may have, saying which it may have', () => {
    withFile(`teams:\n  "<b>x</b>":\n    keys: ["${ops}"]\n    advertisers: ["*"]\n`, (path) => {
      for (const r of [run('list', '--teams', path), run('list', '--config', path)]) {
        expect(r.status).toBe(1)
        expect(r.stdout).toBe('')
        expect(r.stderr).toBe(`keys list: ${path} is not valid:\n  - teams: "<b>x</b>" is not a valid team name (letters, digits, _ . - only, 64 at most, not . or ..)\n`)
      }
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

// A rotation: the old key keeps working until the grace the operator sets, its successor
// keeps the line's first id (lineage) and names the key it replaces; the old entry names
// its successor, which its 401 names once the grace has ended.
describe('keys rotate --key ID --grace WHEN', () => {
  const growth1 = sha256('rgw_rotate_growth_1')
  const ops = sha256('rgw_rotate_ops')
  const DAY = 86_400_000
  const YAML = `# the teams of the report gateway
teams:
  growth:
    keys:
      # growth's first key
      - { hash: "${growth1}", id: growth-1, createdAt: "2098-10-03T00:00:00Z", expiresAt: "2099-01-01T00:00:00Z" }
    advertisers: [101]
  ops:
    keys: ["${ops}"]
    advertisers: ["*"]
`
  const keysOf = (path: string, team: string) => {
    const { teams, problems } = teamsOfFile(path, { teamsFile: true })
    expect(problems).toEqual([])
    return teams.find((t) => t.name === team)!.keys
  }
  const newKey = (stdout: string) => (stdout.match(/rgw_[A-Za-z0-9_-]{43}/g) ?? []) as string[]

  it('writes the rotation into the file: the old key names its successor and its grace, the successor keeps the lineage; the rest of the file stays as it was', () => {
    withFile(YAML, (path) => {
      const before = Date.now()
      const r = run('rotate', '--teams', path, '--key', 'growth-1', '--grace', '7d', '--write')
      expect(r.stderr).toBe('')
      expect(r.status).toBe(0)
      const [key, ...more] = newKey(r.stdout)
      expect(more).toEqual([])
      expect(r.stdout).toContain(`growth-1 keeps working until`)
      const [old, next] = keysOf(path, 'growth')
      expect(old).toMatchObject({ hash: growth1, id: 'growth-1', successor: 'growth-2', lineage: 'growth-1', expiresAt: Date.parse('2099-01-01T00:00:00Z') })
      expect(old!.graceUntil! - before).toBeGreaterThanOrEqual(7 * DAY - 1000)
      expect(old!.graceUntil! - Date.now()).toBeLessThanOrEqual(7 * DAY + 1000)
      expect(next).toMatchObject({ hash: sha256(key!), id: 'growth-2', lineage: 'growth-1', replaces: 'growth-1', successor: null, graceUntil: null })
      // The successor lives as long as the key it replaces did (90 days), from now.
      expect(next!.expiresAt! - next!.createdAt!).toBe(90 * DAY)
      expect(Math.abs(next!.createdAt! - Date.now())).toBeLessThan(5000)
      const text = readFileSync(path, 'utf8')
      expect(text).toContain("# the teams of the report gateway\n")
      expect(text).toContain("      # growth's first key\n")
      expect(text).toContain(`  ops:\n    keys: ["${ops}"]\n    advertisers: ["*"]\n`)
      expect(text).not.toContain(key)
      // One line per entry, as `keys new` prints them.
      expect(text.split('\n').filter((l) => l.includes('hash:'))).toHaveLength(2)
      // keys list says which key replaced which, and until when the old one works.
      const listed = run('list', '--teams', path).stdout.split('\n').map((l) => l.split(/\s{2,}/))
      expect(listed[1]).toEqual(['growth', 'growth-1', growth1.slice(7, 19), `2099-01-01T00:00:00.000Z; replaced by growth-2, works until ${new Date(old!.graceUntil!).toISOString()}`])
      expect(listed[2]![1]).toBe('growth-2')
    })
  })

  it('refuses to rotate a key twice, and rotates its successor into the same line', () => {
    withFile(YAML, (path) => {
      expect(run('rotate', '--teams', path, '--key', 'growth-1', '--grace', '2d', '--write').status).toBe(0)
      const again = run('rotate', '--teams', path, '--key', 'growth-1', '--grace', '2d', '--write')
      expect(again.status).toBe(2)
      expect(again.stderr).toBe('keys: rotate: key growth-1 was replaced by growth-2 already; rotate growth-2 instead (npm run keys -- --help)\n')
      expect(run('rotate', '--teams', path, '--key', 'growth-2', '--grace', '1d', '--id', 'growth-2027', '--expires', 'never', '--write').status).toBe(0)
      const keys = keysOf(path, 'growth')
      expect(keys.map((k) => [k.id, k.lineage, k.replaces, k.successor])).toEqual([
        ['growth-1', 'growth-1', null, 'growth-2'],
        ['growth-2', 'growth-1', 'growth-1', 'growth-2027'],
        ['growth-2027', 'growth-1', 'growth-2', null],
      ])
      expect(keys[2]!.expiresAt).toBeNull()
    })
  })

  it('rotates a key written as a bare hash (its id its fingerprint), and reads a Helm values file by its teams', () => {
    withFile(`image: { repository: registry.internal/report-gateway }\n${YAML}`, (path) => {
      const r = run('rotate', '--config', path, '--key', ops.slice(7, 19), '--grace', '2099-12-31', '--write')
      expect(r.stderr).toBe('')
      expect(r.status).toBe(0)
      const keys = teamsOfFile(path).teams.find((t) => t.name === 'ops')!.keys
      expect(keys.map((k) => [k.id, k.lineage, k.replaces, k.successor, k.graceUntil])).toEqual([
        [ops.slice(7, 19), ops.slice(7, 19), null, `${ops.slice(7, 19)}-2`, Date.parse('2099-12-31T00:00:00Z')],
        [`${ops.slice(7, 19)}-2`, ops.slice(7, 19), ops.slice(7, 19), null, null],
      ])
      expect(readFileSync(path, 'utf8')).toMatch(/^image: \{ repository: registry\.internal\/report-gateway \}\n/)
    })
  })

  it('rotates and removes an entry written as a block mapping over several lines, the lines after it untouched', () => {
    const yaml = `teams:\n  growth:\n    keys:\n      - hash: "${growth1}"\n        id: growth-1\n      - "${ops}"\n    advertisers: [101]\n`
    withFile(yaml, (path) => {
      expect(run('rotate', '--teams', path, '--key', 'growth-1', '--grace', '1d', '--write').status).toBe(0)
      expect(keysOf(path, 'growth').map((k) => [k.id, k.successor, k.replaces])).toEqual([
        ['growth-1', 'growth-2', null],
        ['growth-2', null, 'growth-1'],
        [ops.slice(7, 19), null, null],
      ])
      expect(readFileSync(path, 'utf8')).toMatch(new RegExp(`^ {6}- \\{ hash: .*growth-1.*\\}\\n {6}- \\{ hash: .*growth-2.*\\}\\n {6}- "${ops}"\\n {4}advertisers: \\[101\\]\\n$`, 'm'))
      expect(run('remove', '--teams', path, '--key', 'growth-2', '--write').status).toBe(0)
      expect(run('remove', '--teams', path, '--key', ops.slice(7, 19), '--write').status).toBe(0)
      expect(run('remove', '--teams', path, '--key', 'growth-1', '--write').status).toBe(0)
      expect(readFileSync(path, 'utf8')).toBe('teams:\n  growth:\n    keys:\n      []\n    advertisers: [101]\n')
      expect(keysOf(path, 'growth')).toEqual([])
    })
  })

  it('without --write prints the key once and the two entries that take the old entry\'s place, which validate as they are', () => {
    withFile(YAML, (path) => {
      const r = run('rotate', '--teams', path, '--key', 'growth-1', '--grace', '12h')
      expect(r.status).toBe(0)
      expect(readFileSync(path, 'utf8')).toBe(YAML)
      const entries = r.stdout.split('\n').filter((l) => l.trim().startsWith('- { hash:'))
      expect(entries).toHaveLength(2)
      const pasted = YAML.replace(/^ {6}- \{ hash: .*growth-1.*$/m, entries.join('\n'))
      writeFileSync(path, pasted)
      expect(keysOf(path, 'growth').map((k) => [k.id, k.successor, k.replaces])).toEqual([
        ['growth-1', 'growth-2', null],
        ['growth-2', null, 'growth-1'],
      ])
      expect(newKey(r.stdout)).toHaveLength(1)
    })
  })

  it('refuses what it cannot do in one line, exit 2, naming the value', () => {
    withFile(YAML, (path) => {
      const cases: [string[], string][] = [
        [['--key', 'growth-1', '--write'], 'rotate: --grace WHEN is required: how long the old key keeps working (7d, 24h, or a date)'],
        [['--grace', '7d'], 'rotate: --key ID is required: the id of the key to replace (npm run keys -- list shows them)'],
        [['--key', 'growth-9', '--grace', '7d'], `rotate: no key growth-9 in ${path} (its keys: growth-1, ${ops.slice(7, 19)})`],
        [['--key', 'growth-1', '--grace', '7d', '--id', ops.slice(7, 19)], `rotate: --id ${ops.slice(7, 19)} is the id of a key already`],
        [['--key', 'growth-1', '--grace', '2020-01-01'], 'rotate: --grace "2020-01-01" is not in the future (2020-01-01T00:00:00Z)'],
      ]
      for (const [args, message] of cases) {
        const r = run('rotate', '--teams', path, ...args)
        expect(r.stderr, args.join(' ')).toBe(`keys: ${message} (npm run keys -- --help)\n`)
        expect(r.status).toBe(2)
        expect(r.stdout).toBe('')
      }
      expect(readFileSync(path, 'utf8')).toBe(YAML)
    })
  })
})

describe('keys remove --key ID', () => {
  it('removes a key\'s entry from the file (--write), or says which line to remove', () => {
    const a = sha256('rgw_remove_a')
    const b = sha256('rgw_remove_b')
    const yaml = `teams:\n  growth:\n    keys:\n      - { hash: "${a}", id: growth-1, successor: growth-2, graceUntil: "2026-01-01T00:00:00Z" }\n      - { hash: "${b}", id: growth-2, lineage: growth-1, replaces: growth-1 }\n    advertisers: [101]\n`
    withFile(yaml, (path) => {
      const shown = run('remove', '--teams', path, '--key', 'growth-1')
      expect(shown.status).toBe(0)
      expect(shown.stdout).toContain(`line 4 of ${path}`)
      expect(readFileSync(path, 'utf8')).toBe(yaml)
      const r = run('remove', '--teams', path, '--key', 'growth-1', '--write')
      expect(r.status).toBe(0)
      expect(r.stdout).toContain('removed key growth-1 of team growth')
      const { teams, problems } = teamsOfFile(path, { teamsFile: true })
      expect(problems).toEqual([])
      expect(teams[0]!.keys.map((k) => [k.id, k.lineage, k.replaces])).toEqual([['growth-2', 'growth-1', 'growth-1']])
      const missing = run('remove', '--teams', path, '--key', 'growth-1', '--write')
      expect(missing.status).toBe(2)
      expect(missing.stderr).toBe(`keys: remove: no key growth-1 in ${path} (its keys: growth-2) (npm run keys -- --help)\n`)
    })
  })
})

describe('the built CLI, as operators run it', () => {
  beforeAll(() => ensureBuilt(CLI), 130_000)

  it('prints a new key and its config lines, exit 0', () => {
    const { status, stdout, stderr } = spawnCli({}, 'new', '--team', 'growth')
    expect(status).toBe(0)
    expect(stderr).toBe('')
    const key = (stdout.match(/rgw_[A-Za-z0-9_-]{43}/g) ?? [])[0] as string
    expect(stdout).toContain(sha256(key))
  })

  it('answers a usage mistake in one line with exit code 2, and --help with exit 0', () => {
    const wrong = spawnCli({}, 'hash')
    expect(wrong.status).toBe(2)
    expect(wrong.stderr.trim().split('\n')).toHaveLength(1)
    expect(spawnCli({}, '--help').status).toBe(0)
  })

  it('lists the teams of CONFIG_FILE from its environment', () => {
    withFile('teams:\n  growth:\n    keys: []\n    advertisers: [101]\n', (path) => {
      const r = spawnCli({ CONFIG_FILE: path }, 'list')
      expect(r.status).toBe(0)
      expect(r.stdout.split('\n')[1]).toMatch(/^growth\s+-\s+-\s+no keys$/)
    })
  })
})
