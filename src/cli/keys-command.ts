import { parseArgs } from 'node:util'
import { stringify as yamlScalar } from 'yaml'
import { EXPIRES_AT_PATTERN, KEY_ID_PATTERN, KEY_ID_RULE, TEAM_NAME_PATTERN, TEAM_NAME_RULE } from '../config/schema.js'
import { teamsOfFile } from '../config/teams-file.js'
import { parseExpiry } from '../config/teams.js'
import { parseDuration } from '../config/units.js'
import type { TeamConfig } from '../config.js'
import { hashApiKey, newApiKey } from '../access/api-keys.js'
import { systemClock } from '../clock.js'

/** The shortest token `hash` accepts: ADMIN_TOKEN's own minimum, for named admin tokens too. */
const MIN_TOKEN_LENGTH = 16

const USAGE = `usage:
  npm run keys -- new --team NAME [--advertisers LIST] [--id ID] [--expires WHEN]
                                    make a new API key (printed once) and the config lines
                                    for it (its entry says when it was made: createdAt); LIST: the advertiser ids the team may read,
                                    comma-separated, or * for all (default: none yet);
                                    ID: the key's name in logs, usage and metrics (default:
                                    its fingerprint), of ${KEY_ID_RULE};
                                    WHEN: the key's end, a duration from now (90d, 12h, 2w)
                                    or an ISO date or date-time (2027-03-01 is midnight UTC,
                                    2027-03-01T12:00:00Z); default: the key never expires
  npm run keys -- hash TOKEN        the sha256: line for an existing key or admin token
                                    (at least ${MIN_TOKEN_LENGTH} characters); in
                                    ADMIN_TOKENS_FILE: name:sha256:<hex>[:viewer]
  npm run keys -- list [--teams FILE | --config FILE]
                                    teams, key ids, fingerprints and expiry of a teams file
                                    or a config file (default: TEAMS_FILE, else CONFIG_FILE)
  npm run keys -- --help            this text
npm keeps the options before -- for itself: always write npm run keys -- COMMAND ...
exit code: 0 done, 1 the config file is invalid, 2 a usage mistake.`

/** A mistake on the command line: one line on stderr, exit code 2. */
class UsageError extends Error {}

/** Where the command writes and what environment it reads (the process's, from cli/keys.ts). */
export interface KeysIo {
  out(text: string): void
  err(text: string): void
  env: Record<string, string | undefined>
}

/** `npm run keys -- …` (cli/keys.ts): runs the command line `argv`; returns the exit code. */
export function keysCommand(argv: string[], io: KeysIo): number {
  if (argv.includes('--help') || argv.includes('-h')) {
    io.out(`${USAGE}\n`)
    return 0
  }
  try {
    return run(argv, io)
  } catch (err) {
    if (!(err instanceof UsageError)) throw err
    io.err(`keys: ${err.message} (npm run keys -- --help)\n`)
    return 2
  }
}

function run(argv: string[], io: KeysIo): number {
  const { positionals, values } = parseCommandLine(argv)
  const [command, arg, extra] = positionals
  // `npm run keys new --team x` hands the CLI `new x`: npm took --team for its own option.
  if (command === 'new' && arg !== undefined) {
    throw new UsageError(`new: got ${JSON.stringify(arg)} where only options belong: npm keeps the options before -- for itself; put -- after npm run keys: npm run keys -- new --team NAME`)
  }
  if (extra !== undefined) throw new UsageError(`${command}: one argument at most`)
  if (command === 'list') {
    if (values.teams !== undefined && values.config !== undefined) throw new UsageError('list: give --teams FILE or --config FILE, not both')
    const { path, teamsFile } = listedFile(values, io.env)
    if (!path) throw new UsageError('list: give --teams FILE or --config FILE, or set TEAMS_FILE or CONFIG_FILE')
    const { teams, problems } = teamsOfFile(path, { teamsFile })
    if (problems.length > 0) {
      io.err(`keys list: ${path} is not valid:\n${problems.map((p) => `  - ${p}`).join('\n')}\n`)
      return 1
    }
    io.out(keyTable(teams, systemClock.now()))
    return 0
  }
  if (command === 'new') {
    const team = values.team
    if (!team) throw new UsageError(`new: --team NAME is required (${TEAM_NAME_RULE})`)
    if (!new RegExp(TEAM_NAME_PATTERN).test(team)) throw new UsageError(`new: --team ${JSON.stringify(team)} is not a valid team name (${TEAM_NAME_RULE})`)
    if (values.id !== undefined && !new RegExp(KEY_ID_PATTERN).test(values.id)) throw new UsageError(`new: --id ${JSON.stringify(values.id)} is not a valid key id: ${KEY_ID_RULE}`)
    const advertisers = advertiserList(values.advertisers)
    const expiresAt = values.expires === undefined ? undefined : expiry(values.expires, systemClock.now())
    const key = newApiKey()
    io.out(
      `API key for team ${team} (shown once; give it to the team, store it nowhere else):\n  ${key}\n\n` +
        `Add the team to your TEAMS_FILE or CONFIG_FILE (or its key entry to the team's keys if the team is there):\n` +
        `teams:\n  ${yamlScalar(team).trimEnd()}:\n    keys:\n      ${keyEntry(hashApiKey(key), values.id, iso(systemClock.now()), expiresAt)}\n    advertisers: ${advertisers}\n`,
    )
    return 0
  }
  if (command === 'hash') {
    if (arg === undefined) throw new UsageError('hash: give the TOKEN to hash')
    // The rule, never the token: a mistyped secret must not land in a terminal log.
    if (arg.length < MIN_TOKEN_LENGTH) throw new UsageError(`hash: a token must be at least ${MIN_TOKEN_LENGTH} characters long`)
    io.out(`${hashApiKey(arg)}\n`)
    return 0
  }
  throw new UsageError(command === undefined ? 'give a command: new, hash or list' : `unknown command "${command}": new, hash or list`)
}

interface Options {
  team?: string
  config?: string
  teams?: string
  advertisers?: string
  id?: string
  expires?: string
}

function parseCommandLine(argv: string[]): { positionals: string[]; values: Options } {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: { team: { type: 'string' }, config: { type: 'string' }, teams: { type: 'string' }, advertisers: { type: 'string' }, id: { type: 'string' }, expires: { type: 'string' } },
    })
  } catch (err) {
    // Node's own wording (e.g. "Option '--team <value>' argument missing"), first sentence only.
    throw new UsageError((err as Error).message.split(/\.\s|\n/)[0] ?? 'invalid command line')
  }
}

/** The file `list` reads, as the gateway would: TEAMS_FILE holds the teams when it is set. */
function listedFile(values: { config?: string; teams?: string }, env: KeysIo['env']): { path: string | undefined; teamsFile: boolean } {
  if (values.teams !== undefined) return { path: values.teams, teamsFile: true }
  if (values.config !== undefined) return { path: values.config, teamsFile: false }
  if (env.TEAMS_FILE) return { path: env.TEAMS_FILE, teamsFile: true }
  return { path: env.CONFIG_FILE, teamsFile: false }
}

/** The YAML flow list of --advertisers, `[]` when none is given (the team reads nothing yet). */
function advertiserList(value: string | undefined): string {
  if (value === undefined) return '[] # the advertiser ids this team may read, or ["*"] for all'
  const items = value.split(',').map((s) => s.trim())
  const wrong = items.find((s) => s !== '*' && !(/^[1-9]\d*$/.test(s) && Number.isSafeInteger(Number(s))))
  if (wrong !== undefined) {
    const what = wrong === '' ? 'holds an empty item' : `holds ${JSON.stringify(wrong)}, not an advertiser id`
    throw new UsageError(`new: --advertisers ${JSON.stringify(value)} ${what}; give advertiser ids (positive integers) separated by commas, or *`)
  }
  return items.includes('*') ? '["*"]' : `[${[...new Set(items)].join(', ')}]`
}

/**
 * The key's end from --expires: a duration from `now` (the config's units, and w for
 * weeks) or a date as the teams config reads it; refused when it is not in the future.
 * An ISO date-time in UTC, rounded up to the second: never before the instant asked for.
 */
function expiry(value: string, now: number): string {
  const weeks = /^(\d+)w$/.exec(value)
  let at: number
  if (weeks) at = now + Number(weeks[1]) * 7 * 86_400_000
  else if (/^\d+(ms|s|m|h|d)$/.test(value)) at = now + parseDuration(value)
  else if (new RegExp(EXPIRES_AT_PATTERN).test(value)) at = parseExpiry(value)
  else at = Number.NaN
  if (!Number.isFinite(at) || at > MAX_DATE) {
    throw new UsageError(`new: --expires ${JSON.stringify(value)} is neither a duration from now (90d, 12h, 2w) nor an ISO date or date-time (2027-03-01, 2027-03-01T12:00:00Z)`)
  }
  if (at <= now) throw new UsageError(`new: --expires ${JSON.stringify(value)} is not in the future (${iso(at)})`)
  return iso(at)
}

/** The last instant a Date holds. */
const MAX_DATE = 8.64e15

function iso(ms: number): string {
  return new Date(Math.ceil(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z')
}

/** The key's entry of a team's `keys:` list, on one line: its hash, its id, when it was made, its end. */
function keyEntry(hash: string, id: string | undefined, createdAt: string, expiresAt: string | undefined): string {
  const fields = [`hash: ${JSON.stringify(hash)}`]
  if (id !== undefined) fields.push(`id: ${JSON.stringify(id)}`)
  fields.push(`createdAt: ${JSON.stringify(createdAt)}`)
  if (expiresAt !== undefined) fields.push(`expiresAt: ${JSON.stringify(expiresAt)}`)
  return `- { ${fields.join(', ')} }`
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

