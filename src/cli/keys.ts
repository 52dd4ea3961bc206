import { parseArgs } from 'node:util'
import { teamsOfFile } from '../config/teams-file.js'
import type { TeamConfig } from '../config.js'
import { hashApiKey, newApiKey } from '../teams/api-keys.js'

/** The shortest token `hash` accepts: ADMIN_TOKEN's own minimum, for named admin tokens too. */
const MIN_TOKEN_LENGTH = 16

const USAGE = `usage:
  npm run keys -- new --team NAME [--advertisers LIST]
                                    make a new API key (printed once) and the config lines
                                    for it; LIST: the advertiser ids the team may read,
                                    comma-separated, or * for all (default: none yet)
  npm run keys -- hash TOKEN        the sha256: line for an existing key or admin token
                                    (at least ${MIN_TOKEN_LENGTH} characters)
  npm run keys -- list [--teams FILE | --config FILE]
                                    teams, key ids, fingerprints and expiry of a teams file
                                    or a config file (default: TEAMS_FILE, else CONFIG_FILE)
  npm run keys -- --help            this text
exit code: 0 done, 1 the config file is invalid, 2 a usage mistake.`

/** A mistake on the command line: one line on stderr, exit code 2. */
class UsageError extends Error {}

function main(argv: string[]): number {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`)
    return 0
  }
  try {
    return run(argv)
  } catch (err) {
    if (!(err instanceof UsageError)) throw err
    process.stderr.write(`keys: ${err.message} (npm run keys -- --help)\n`)
    return 2
  }
}

function run(argv: string[]): number {
  const { positionals, values } = parseCommandLine(argv)
  const [command, arg, extra] = positionals
  if (extra !== undefined) throw new UsageError(`${command}: one argument at most`)
  if (command === 'list') {
    if (values.teams !== undefined && values.config !== undefined) throw new UsageError('list: give --teams FILE or --config FILE, not both')
    const { path, teamsFile } = listedFile(values)
    if (!path) throw new UsageError('list: give --teams FILE or --config FILE, or set TEAMS_FILE or CONFIG_FILE')
    const { teams, problems } = teamsOfFile(path, { teamsFile })
    if (problems.length > 0) {
      process.stderr.write(`keys list: ${path} is not valid:\n${problems.map((p) => `  - ${p}`).join('\n')}\n`)
      return 1
    }
    process.stdout.write(keyTable(teams, Date.now()))
    return 0
  }
  if (command === 'new') {
    const team = values.team
    if (!team || !/^[A-Za-z0-9_.-]+$/.test(team)) throw new UsageError('new: --team NAME is required (letters, digits, _ . -)')
    const advertisers = advertiserList(values.advertisers)
    const key = newApiKey()
    process.stdout.write(
      `API key for team ${team} (shown once; give it to the team, store it nowhere else):\n  ${key}\n\n` +
        `Add the team to your TEAMS_FILE or CONFIG_FILE (or its hash to the team's keys if the team is there):\n` +
        `teams:\n  ${team}:\n    keys: ["${hashApiKey(key)}"]\n    advertisers: ${advertisers}\n`,
    )
    return 0
  }
  if (command === 'hash') {
    if (arg === undefined) throw new UsageError('hash: give the TOKEN to hash')
    // The rule, never the token: a mistyped secret must not land in a terminal log.
    if (arg.length < MIN_TOKEN_LENGTH) throw new UsageError(`hash: a token must be at least ${MIN_TOKEN_LENGTH} characters long`)
    process.stdout.write(`${hashApiKey(arg)}\n`)
    return 0
  }
  throw new UsageError(command === undefined ? 'give a command: new, hash or list' : `unknown command "${command}": new, hash or list`)
}

function parseCommandLine(argv: string[]): { positionals: string[]; values: { team?: string; config?: string; teams?: string; advertisers?: string } } {
  try {
    return parseArgs({ args: argv, allowPositionals: true, options: { team: { type: 'string' }, config: { type: 'string' }, teams: { type: 'string' }, advertisers: { type: 'string' } } })
  } catch (err) {
    // Node's own wording (e.g. "Option '--team <value>' argument missing"), first sentence only.
    throw new UsageError((err as Error).message.split(/\.\s|\n/)[0] ?? 'invalid command line')
  }
}

/** The file `list` reads, as the gateway would: TEAMS_FILE holds the teams when it is set. */
function listedFile(values: { config?: string; teams?: string }): { path: string | undefined; teamsFile: boolean } {
  if (values.teams !== undefined) return { path: values.teams, teamsFile: true }
  if (values.config !== undefined) return { path: values.config, teamsFile: false }
  if (process.env.TEAMS_FILE) return { path: process.env.TEAMS_FILE, teamsFile: true }
  return { path: process.env.CONFIG_FILE, teamsFile: false }
}

/** The YAML flow list of --advertisers, `[]` when none is given (the team reads nothing yet). */
function advertiserList(value: string | undefined): string {
  if (value === undefined) return '[] # the advertiser ids this team may read, or ["*"] for all'
  const items = value.split(',').map((s) => s.trim()).filter(Boolean)
  if (items.length === 0 || !items.every((s) => s === '*' || /^[1-9]\d{0,15}$/.test(s))) {
    throw new UsageError('new: --advertisers is a comma-separated list of advertiser ids, or *')
  }
  return items.includes('*') ? '["*"]' : `[${[...new Set(items)].join(', ')}]`
}

/** One line per key: team, key id, fingerprint (the hash's first 12 hex digits), expiry. */
function keyTable(teams: TeamConfig[], now: number): string {
  const rows = [['TEAM', 'KEY ID', 'FINGERPRINT', 'EXPIRES']]
  for (const team of teams) {
    if (team.keys.length === 0) rows.push([team.name, '-', '-', 'no keys'])
    for (const key of team.keys) {
      const expires = key.expiresAt === null ? 'never' : `${new Date(key.expiresAt).toISOString()}${key.expiresAt <= now ? ' (EXPIRED)' : ''}`
      rows.push([team.name, key.id, key.hash.slice(7, 19), expires])
    }
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n') + '\n'
}

process.exitCode = main(process.argv.slice(2))
