import { parseArgs } from 'node:util'
import { stringify as yamlScalar } from 'yaml'
import { EXPIRES_AT_PATTERN, KEY_ID_PATTERN, KEY_ID_RULE, TEAM_NAME_PATTERN, TEAM_NAME_RULE } from '../config/names.js'
import { teamsOfFile } from '../config/teams-file.js'
import { tokenFault } from '../config/sources.js'
import { defaultKeyId, parseExpiry, type TeamKey } from '../config/teams.js'
import { parseDuration } from '../config/units.js'
import type { TeamConfig } from '../config.js'
import { hashApiKey, newApiKey } from '../access/api-keys.js'
import { systemClock } from '../clock.js'
import { KeysFile, writeWhole } from './keys-file.js'

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
  npm run keys -- rotate --key ID --grace WHEN [--id NEW_ID] [--expires WHEN|never]
                     [--teams FILE | --config FILE] [--write]
                                    replace key ID with a new key (printed once): the old
                                    key keeps working until WHEN (7d, 24h, or a date), then
                                    is refused (401) naming its successor; the new key keeps
                                    the old one's lineage. NEW_ID: default the old id's
                                    number plus one (growth-1: growth-2); its end: --expires,
                                    default the old key's lifetime from now. --write edits
                                    the file (a Helm values file too, with --config);
                                    without it, the lines to paste are printed
  npm run keys -- remove --key ID [--teams FILE | --config FILE] [--write]
                                    remove key ID's entry (a revocation, or a rotated key
                                    once its callers have moved): --write edits the file,
                                    without it the line is named
  npm run keys -- hash TOKEN        the sha256: line for an existing key or admin token
                                    (at least ${MIN_TOKEN_LENGTH} characters, the token alone:
                                    no "Bearer ", no space inside); in
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
  if (command === 'new' && arg !== undefined) throw new UsageError(strayWordInNew(argv, arg, Object.keys(values).length > 0))
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
    const foreign = NOT_NEW.find((name) => values[name] !== undefined)
    if (foreign !== undefined) throw new UsageError(`new: --${foreign} is not an option of new (it is rotate's and remove's); new writes no file: it prints the key and the lines to add to your TEAMS_FILE or CONFIG_FILE`)
    const team = values.team
    if (!team) throw new UsageError(`new: --team NAME is required (${TEAM_NAME_RULE})`)
    if (!new RegExp(TEAM_NAME_PATTERN).test(team)) throw new UsageError(`new: --team ${JSON.stringify(team)} is not a valid team name (${TEAM_NAME_RULE})`)
    if (values.id !== undefined && !new RegExp(KEY_ID_PATTERN).test(values.id)) throw new UsageError(`new: --id ${JSON.stringify(values.id)} is not a valid key id: ${KEY_ID_RULE}`)
    const advertisers = advertiserList(values.advertisers)
    const expiresAt = values.expires === undefined ? undefined : expiry('new', '--expires', values.expires, systemClock.now())
    const key = newApiKey()
    const hash = hashApiKey(key)
    // The id is the one `rotate --key` and `remove --key` take: a key made without --id
    // is known by the id the gateway gives it, which its entry does not write.
    io.out(
      `API key ${values.id ?? defaultKeyId(hash)} for team ${team} (shown once; give it to the team, store it nowhere else):\n  ${key}\n\n` +
        `Add the team to your TEAMS_FILE or CONFIG_FILE (or its key entry to the team's keys if the team is there):\n` +
        `teams:\n  ${yamlScalar(team).trimEnd()}:\n    keys:\n      ${keyEntry(hash, values.id, iso(systemClock.now()), expiresAt)}\n    advertisers: ${advertisers}\n`,
    )
    return 0
  }
  if ((command === 'rotate' || command === 'remove') && arg !== undefined) {
    throw new UsageError(`${command}: got ${JSON.stringify(arg)} where only options belong: name the key with --key ID (npm run keys -- ${command} --key ID ...)`)
  }
  if (command === 'rotate') return rotate(values, io)
  if (command === 'remove') return remove(values, io)
  if (command === 'hash') {
    if (arg === undefined) throw new UsageError('hash: give the TOKEN to hash')
    // The rule, never the token: a mistyped secret must not land in a terminal log. A token
    // no authorization header carries (`Bearer <token>`, a space, a typographic quote) makes
    // a line no call matches: refused by ADMIN_TOKEN's own rule (tokenFault).
    const fault = tokenFault(arg)
    if (fault !== null) throw new UsageError(`hash: the token ${fault}`)
    if (arg.length < MIN_TOKEN_LENGTH) throw new UsageError(`hash: a token must be at least ${MIN_TOKEN_LENGTH} characters long`)
    io.out(`${hashApiKey(arg)}\n`)
    return 0
  }
  throw new UsageError(command === undefined ? 'give a command: new, rotate, remove, hash or list' : `unknown command "${command}": new, rotate, remove, hash or list`)
}

/** The file `rotate` and `remove` edit, validated as the gateway reads it; null: it is not valid (said on stderr). */
function keysFile(command: string, values: Options, io: KeysIo): { file: KeysFile; teams: TeamConfig[]; teamsFile: boolean } | null {
  if (values.teams !== undefined && values.config !== undefined) throw new UsageError(`${command}: give --teams FILE or --config FILE, not both`)
  const { path, teamsFile } = listedFile(values, io.env)
  if (!path) throw new UsageError(`${command}: give --teams FILE or --config FILE, or set TEAMS_FILE or CONFIG_FILE`)
  const { teams, problems } = teamsOfFile(path, { teamsFile })
  if (problems.length > 0) {
    io.err(`keys ${command}: ${path} is not valid:\n${problems.map((p) => `  - ${p}`).join('\n')}\n`)
    return null
  }
  return { file: new KeysFile(path), teams, teamsFile }
}

/** The team, key and its place in the team's list of the key `id`. */
function findKey(command: string, teams: TeamConfig[], id: string | undefined, path: string): { team: TeamConfig; key: TeamKey; index: number } {
  if (id === undefined) throw new UsageError(`${command}: --key ID is required: the id of the key to ${command === 'rotate' ? 'replace' : 'remove'} (npm run keys -- list shows them)`)
  for (const team of teams) {
    const index = team.keys.findIndex((k) => k.id === id)
    if (index !== -1) return { team, key: team.keys[index] as TeamKey, index }
  }
  const all = teams.flatMap((t) => t.keys.map((k) => k.id))
  throw new UsageError(`${command}: no key ${id} in ${path} (its keys: ${all.join(', ') || 'none'})`)
}

/** The text as written into `path`, once it validates as the gateway would read it. */
function checkedWrite(command: string, path: string, teamsFile: boolean, text: string): void {
  const { problems } = teamsOfFile(path, { teamsFile }, () => text)
  // Never reached with the gateway's own entries; said rather than written.
  if (problems.length > 0) throw new Error(`keys ${command}: the edited ${path} would not validate (${problems.join('; ')}); nothing was written`)
  writeWhole(path, text)
}

const RELOAD_HINT = 'Every replica applies it once it sees the file (about two seconds; with the chart, helm upgrade, or the teams Secret updated, then about a minute), or at once after POST /admin/reload.'

/**
 * `rotate`: a successor for the key `--key`. The old entry gains `successor` and
 * `graceUntil` (it works until then, then is 401 naming its successor); the new entry,
 * after it, keeps the line's first id (`lineage`) and names the key it replaces.
 */
function rotate(values: Options, io: KeysIo): number {
  const opened = keysFile('rotate', values, io)
  if (opened === null) return 1
  const { file, teams, teamsFile } = opened
  const { team, key, index } = findKey('rotate', teams, values.key, file.path)
  if (key.successor !== null) throw new UsageError(`rotate: key ${key.id} was replaced by ${key.successor} already; rotate ${key.successor} instead`)
  if (values.grace === undefined) throw new UsageError('rotate: --grace WHEN is required: how long the old key keeps working (7d, 24h, or a date)')
  const now = systemClock.now()
  const graceUntil = expiry('rotate', '--grace', values.grace, now)
  const taken = new Set(teams.flatMap((t) => t.keys.map((k) => k.id)))
  const id = values.id ?? nextKeyId(key, taken)
  if (!new RegExp(KEY_ID_PATTERN).test(id)) throw new UsageError(`rotate: --id ${JSON.stringify(id)} is not a valid key id: ${KEY_ID_RULE}`)
  if (taken.has(id)) throw new UsageError(`rotate: --id ${id} is the id of a key already`)
  const expiresAt = successorEnd(values.expires, key, now)
  const secret = newApiKey()
  const old = file.entry(team.name, index)
  const oldEntry = flowEntry({ ...old.fields, successor: id, graceUntil })
  const newEntry = flowEntry({ hash: hashApiKey(secret), id, createdAt: iso(now), ...(expiresAt === undefined ? {} : { expiresAt }), lineage: key.lineage, replaces: key.id })
  const until = key.expiresAt !== null && key.expiresAt < Date.parse(graceUntil) ? `${iso(key.expiresAt)} (its own end, before the grace you asked)` : graceUntil
  const head = `API key ${id} for team ${team.name}, replacing ${key.id} (shown once; give it to the team, store it nowhere else):\n  ${secret}\n\n`
  const after = `${key.id} keeps working until ${until}; from then on it is refused (401) with a message naming ${id}. ${RELOAD_HINT}\n`
  if (values.write === true) {
    checkedWrite('rotate', file.path, teamsFile, file.replaced(team.name, index, [oldEntry, newEntry]))
    io.out(`${head}Wrote ${file.path}: ${id} added to team ${team.name} after ${key.id}, which names it as its successor.\n${after}`)
    return 0
  }
  const prefix = ' '.repeat(6)
  io.out(`${head}In team ${team.name}'s keys (${file.path}, line ${old.line}), replace the entry of ${key.id} with these two lines:\n${prefix}- ${oldEntry}\n${prefix}- ${newEntry}\n${after}`)
  return 0
}

/** `remove`: the entry of the key `--key` taken out of the file (`--write`), or named. */
function remove(values: Options, io: KeysIo): number {
  const opened = keysFile('remove', values, io)
  if (opened === null) return 1
  const { file, teams, teamsFile } = opened
  const { team, key, index } = findKey('remove', teams, values.key, file.path)
  const line = file.entry(team.name, index).line
  const refused = `From then on every replica answers it 401 GW_UNAUTHORIZED. ${RELOAD_HINT}\n`
  if (values.write === true) {
    checkedWrite('remove', file.path, teamsFile, file.without(team.name, index))
    io.out(`removed key ${key.id} of team ${team.name} from ${file.path}. ${refused}`)
    return 0
  }
  io.out(`Remove the entry of key ${key.id} of team ${team.name}: line ${line} of ${file.path}. ${refused}`)
  return 0
}

/**
 * The id of a key's successor: its number plus one, with as many digits (growth-1:
 * growth-2, growth-2026: growth-2027, 007: 008), else -2 after it (a key known by its
 * fingerprint too: its last hex digit is no number), the next one free.
 */
export function nextKeyId(key: Pick<TeamKey, 'id' | 'hash'>, taken: ReadonlySet<string>): string {
  const numbered = key.id === defaultKeyId(key.hash) ? null : /^(.*?)(\d+)$/.exec(key.id)
  const [base, digits] = numbered ? [numbered[1] as string, numbered[2] as string] : [`${key.id}-`, '1']
  for (let n = Number(digits) + 1; ; n++) {
    const id = `${base}${String(n).padStart(digits.length, '0')}`
    if (!taken.has(id)) return id
  }
}

/** The successor's end: --expires (never: none), else the old key's lifetime again from now, else none. */
function successorEnd(value: string | undefined, key: TeamKey, now: number): string | undefined {
  if (value === 'never') return undefined
  if (value !== undefined) return expiry('rotate', '--expires', value, now)
  if (key.createdAt === null || key.expiresAt === null || key.expiresAt <= key.createdAt) return undefined
  return iso(now + (key.expiresAt - key.createdAt))
}

/** A key entry on one line, its fields in the order the gateway's own entries have. */
function flowEntry(fields: Record<string, string>): string {
  const order = ['hash', 'id', 'createdAt', 'expiresAt', 'lineage', 'replaces', 'successor', 'graceUntil']
  const names = [...order.filter((k) => k in fields), ...Object.keys(fields).filter((k) => !order.includes(k))]
  return `{ ${names.map((k) => `${k}: ${JSON.stringify(fields[k])}`).join(', ')} }`
}

/** The options of rotate and remove that new has no use for: given to new, they would be taken and do nothing. */
const NOT_NEW = ['write', 'teams', 'config', 'key', 'grace'] as const

interface Options {
  team?: string
  key?: string
  grace?: string
  write?: boolean
  config?: string
  teams?: string
  advertisers?: string
  id?: string
  expires?: string
}

/**
 * Why `word` stands where `new` takes options only. No option arrived: npm kept them for
 * itself (`npm run keys new --team x` hands the CLI `new x`). Options arrived: a space split
 * a value, as a shell splits `--advertisers 101, 102`, named with the option it belongs to.
 */
function strayWordInNew(argv: string[], word: string, optionsArrived: boolean): string {
  if (!optionsArrived) return `new: got ${JSON.stringify(word)} where only options belong: npm keeps the options before -- for itself; put -- after npm run keys: npm run keys -- new --team NAME`
  const at = argv.indexOf(word)
  const [option, value] = [argv[at - 2], argv[at - 1]]
  if (option?.startsWith('--') === true && value?.endsWith(',') === true) {
    const rest = argv.slice(at - 1)
    const end = rest.findIndex((a) => a.startsWith('--'))
    const list = (end === -1 ? rest : rest.slice(0, end)).join('')
    return `new: got ${JSON.stringify(word)} after ${option} ${JSON.stringify(value)}: an option's value ends at a space; write the list without spaces (${option} ${list}) or quote it`
  }
  return `new: got ${JSON.stringify(word)} among the options: new takes options only (--team NAME, --advertisers LIST, --id ID, --expires WHEN); an option's value ends at a space, so quote a value that holds one`
}

function parseCommandLine(argv: string[]): { positionals: string[]; values: Options } {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        team: { type: 'string' },
        config: { type: 'string' },
        teams: { type: 'string' },
        advertisers: { type: 'string' },
        id: { type: 'string' },
        expires: { type: 'string' },
        key: { type: 'string' },
        grace: { type: 'string' },
        write: { type: 'boolean' },
      },
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
  if (!items.includes('*')) return `[${[...new Set(items)].join(', ')}]`
  // As the teams config has it (config/teams.ts): * is every advertiser, and stands alone.
  if (items.some((s) => s !== '*')) throw new UsageError(`new: --advertisers ${JSON.stringify(value)} holds * (every advertiser) beside advertiser ids; give the ids, or * alone`)
  return '["*"]'
}

/**
 * The key's end from --expires: a duration from `now` (the config's units, and w for
 * weeks) or a date as the teams config reads it; refused when it is not in the future.
 * An ISO date-time in UTC, rounded up to the second: never before the instant asked for.
 */
function expiry(command: string, option: string, value: string, now: number): string {
  const weeks = /^(\d+)w$/.exec(value)
  let at: number
  if (weeks) at = now + Number(weeks[1]) * 7 * 86_400_000
  else if (/^\d+(ms|s|m|h|d)$/.test(value)) at = now + parseDuration(value)
  else if (new RegExp(EXPIRES_AT_PATTERN).test(value)) at = parseExpiry(value)
  else at = Number.NaN
  if (!Number.isFinite(at) || at > MAX_DATE) {
    throw new UsageError(`${command}: ${option} ${JSON.stringify(value)} is neither a duration from now (90d, 12h, 2w) nor an ISO date or date-time (2027-03-01, 2027-03-01T12:00:00Z)`)
  }
  if (at <= now) throw new UsageError(`${command}: ${option} ${JSON.stringify(value)} is not in the future (${iso(at)})`)
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

/** One line per key: team, key id, fingerprint (the hash's first 12 hex digits), expiry (and a rotated key's successor and grace). */
function keyTable(teams: TeamConfig[], now: number): string {
  const rows = [['TEAM', 'KEY ID', 'FINGERPRINT', 'EXPIRES']]
  for (const team of teams) {
    if (team.keys.length === 0) rows.push([team.name, '-', '-', 'no keys'])
    for (const key of team.keys) {
      const expires = key.expiresAt === null ? 'never' : `${new Date(key.expiresAt).toISOString()}${key.expiresAt <= now ? ' (EXPIRED)' : ''}`
      const grace = key.graceUntil === null ? '' : `, works until ${new Date(key.graceUntil).toISOString()}${key.graceUntil <= now ? ' (GRACE ENDED)' : ''}`
      rows.push([team.name, key.id, key.hash.slice(7, 19), key.successor === null ? expires : `${expires}; replaced by ${key.successor}${grace}`])
    }
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n') + '\n'
}

