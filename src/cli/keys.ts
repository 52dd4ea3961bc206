import { keysCommand } from './keys-command.js'

// `npm run keys -- …`: the key command (cli/keys-command.ts) on this process's arguments,
// output and environment.
process.exitCode = keysCommand(process.argv.slice(2), { out: (text) => process.stdout.write(text), err: (text) => process.stderr.write(text), env: process.env })
