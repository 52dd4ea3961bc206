import { parseArgs } from 'node:util'
import { hashApiKey, newApiKey } from '../teams/api-keys.js'

const USAGE = `usage:
  npm run keys -- new --team NAME   make a new API key (printed once) and its config line
  npm run keys -- hash KEY          the config line for an existing key`

function main(argv: string[]): number {
  const { positionals, values } = parseArgs({ args: argv, allowPositionals: true, options: { team: { type: 'string' } } })
  const [command, arg] = positionals
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

process.exitCode = main(process.argv.slice(2))
