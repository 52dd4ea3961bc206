import { parseArgs } from 'node:util'
import { teamsOfFile } from '../config/teams-file.js'
import type { TeamConfig } from '../config.js'
import { hashApiKey, newApiKey } from '../teams/api-keys.js'

const USAGE = `usage:
  npm run keys -- new --team NAME   make a new API key (printed once) and its config line
  npm run keys -- hash KEY          the config line for an existing key
  npm run keys -- list [--config FILE]
                                    teams, key ids, fingerprints and expiry of a config file
                                    (default: CONFIG_FILE)`

function main(argv: string[]): number {
  const { positionals, values } = parseArgs({ args: argv, allowPositionals: true, options: { team: { type: 'string' }, config: { type: 'string' } } })
  const [command, arg] = positionals
  if (command === 'list') {
    const path = values.config ?? process.env.CONFIG_FILE
    if (!path) {
      process.stderr.write(`keys list: give --config FILE or set CONFIG_FILE\n${USAGE}\n`)
      return 2
    }
    const { teams, problems } = teamsOfFile(path)
    if (problems.length > 0) {
      process.stderr.write(`keys list: ${path} is not valid:\n${problems.map((p) => `  - ${p}`).join('\n')}\n`)
      return 1
    }
    process.stdout.write(keyTable(teams, Date.now()))
    return 0
  }
  if (command === 'new') {
    const team = values.team
    if (!team || !/^[A-Za-z0-9_.-]+$/.test(team)) {
      process.stderr.write(`keys new: --team NAME is required (letters, digits, _ . -)\n${USAGE}\n`)
      return 2
    }
    const key = newApiKey()
    process.stdout.write(
      `API key for team ${team} (shown once; give it to the team, store it nowhere else):\n  ${key}\n\n` +
        `Add its hash to the team in your CONFIG_FILE:\n  teams:\n    ${team}:\n      keys: ["${hashApiKey(key)}"]\n`,
    )
    return 0
  }
  if (command === 'hash' && arg) {
    process.stdout.write(`${hashApiKey(arg)}\n`)
    return 0
  }
  process.stderr.write(`${USAGE}\n`)
  return 2
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
