import { readFileSync } from 'node:fs'
import { escapedForms } from './secret-forms.js'
import { withoutKeys } from './key-shape.js'
import type { Env } from '../config/sources.js'
import { tokensFileSecrets } from '../config/admin-tokens.js'
import { teamFileSecrets } from '../config/teams-file.js'
import { exporterHeaderSecrets } from '../config/tracing.js'

// contract.md, "When the start stops": a secret's value is never printed. A check that
// names a setting's value (`LOG_LEVEL: … (got "…")`, `cannot listen on <host>:<port>`)
// repeats what the operator set, and an operator may have pasted a secret there (the
// token as LOG_LEVEL, GATEWAY_SECRET as PORT, the token in PLATFORM_BASE_URL's query):
// each line printed before the gateway's logger runs is scrubbed of every secret the
// environment holds, and of those of the files it names, as the logger scrubs each of its lines.

/** A variable holding a secret: its value, or that of the file its `_FILE` variable names. */
const SECRET_VARIABLE = /(?:TOKEN|SECRET|PASSWORD|USERNAME|CLIENT_ID)$/

/**
 * The files, by the variable that names them, whose secrets are no variable's: the admin
 * tokens of ADMIN_TOKENS_FILE, the teams' keys and webhook secrets of TEAMS_FILE and
 * CONFIG_FILE; of a file the start refuses, those of what reads.
 */
const FILES_OF_SECRETS: ReadonlyMap<string, (text: string) => string[]> = new Map([
  ['ADMIN_TOKENS_FILE', tokensFileSecrets],
  ['TEAMS_FILE', teamFileSecrets],
  ['CONFIG_FILE', teamFileSecrets],
])

// Shorter values would scrub ordinary words (the logger's SecretSet keeps the same floor).
const MIN_SECRET_CHARS = 6

/**
 * Every secret value `env` gives, directly or through a `*_FILE` variable (its content
 * trimmed), and those of the files FILES_OF_SECRETS names.
 */
export function startSecrets(env: Env, readFile: (path: string) => string = (p) => readFileSync(p, 'utf8')): string[] {
  const values = new Set<string>()
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || value === '') continue
    const secretsIn = secretsInFile(name)
    if (SECRET_VARIABLE.test(name)) values.add(value)
    else if (secretsIn !== undefined) {
      try {
        for (const secret of secretsIn(readFile(value))) values.add(secret)
      } catch {
        // A file that cannot be read holds nothing to hide; the refusal names it.
      }
    } else if (name === 'OTEL_EXPORTER_OTLP_HEADERS' || name === 'OTEL_EXPORTER_OTLP_TRACES_HEADERS') {
      // The trace exporter's headers: a collector's token, in a value or after a scheme.
      for (const secret of exporterHeaderSecrets(value)) values.add(secret)
    } else if (name === 'REDIS_URL' || name.startsWith('REDIS_SENTINEL')) {
      const password = /^[a-z]+:\/\/[^/@]*:([^/@]+)@/i.exec(value)?.[1]
      if (password !== undefined) {
        values.add(password)
        try {
          values.add(decodeURIComponent(password))
        } catch {
          // A malformed escape: the password is kept as written.
        }
      }
    }
  }
  return [...values].map((v) => v.trim()).filter((v) => v.length >= MIN_SECRET_CHARS)
}

/** What is secret of the file the variable `name` names: the whole file of a secret variable's `_FILE`, the secrets FILES_OF_SECRETS reads; undefined: the variable names no such file. */
function secretsInFile(name: string): ((text: string) => string[]) | undefined {
  return name.endsWith('_FILE') && SECRET_VARIABLE.test(name.slice(0, -'_FILE'.length)) ? (text) => [text] : FILES_OF_SECRETS.get(name)
}

/** `text` with each of `secrets` (in each spelling a line may hold) and anything shaped like a team key written `[REDACTED]`. */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  const forms = [...new Set(secrets.flatMap((s) => escapedForms(s)))].sort((a, b) => b.length - a.length)
  let out = withoutKeys(text)
  for (const form of forms) out = out.split(form).join('[REDACTED]')
  return out
}
