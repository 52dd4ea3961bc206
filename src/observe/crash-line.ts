import { hostname } from 'node:os'
import { systemClock } from '../clock.js'
import { scrubSecrets } from './start-secrets.js'
import { escapedLineBreakers } from './line-escapes.js'

/** pino's level of a line after which the process ends. */
const FATAL = 60

/**
 * The one line a crash writes before the gateway's logger runs: JSON in the logger's
 * shape (`level` 60, `time`, `pid`, `hostname`, `err` as pino writes an error, `msg`), so
 * that a log shipper reads it as it reads the others, with the secrets `secrets` names
 * scrubbed, as every line printed before the logger runs is, and each character that
 * breaks a line to some reader escaped, as in every line of the logger (line-escapes.ts).
 */
export function crashLine(msg: string, err: unknown, secrets: readonly string[], now: number = systemClock.now()): string {
  const error = err instanceof Error ? { type: err.constructor.name, message: err.message, stack: err.stack } : { type: typeof err, message: String(err) }
  return `${escapedLineBreakers(scrubSecrets(JSON.stringify({ level: FATAL, time: now, pid: process.pid, hostname: hostname(), err: error, msg }), secrets))}\n`
}
