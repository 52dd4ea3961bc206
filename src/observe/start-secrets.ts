import { readFileSync } from 'node:fs'
import { escapedForms } from './secret-forms.js'
import { withoutKeys } from './key-shape.js'
import type { Env } from '../config/sources.js'

// contract.md, "When the start stops": a secret's value is never printed. A check that
// names a setting's value (`LOG_LEVEL: … (got "…")`, `cannot listen on <host>:<port>`)
// repeats what the operator set, and an operator may have pasted a secret there (the
// token as LOG_LEVEL, GATEWAY_SECRET as PORT, the token in PLATFORM_BASE_URL's query):
// each line printed before the gateway's logger runs is scrubbed of every secret the
// environment holds, as the logger scrubs each of its lines.

/** A variable holding a secret: its value, or that of the file its `_FILE` variable names. */
const SECRET_VARIABLE = /(?:TOKEN|SECRET|PASSWORD|USERNAME|CLIENT_ID)$/

// Shorter values would scrub ordinary words (the logger's SecretSet keeps the same floor).
const MIN_SECRET_CHARS = 6

/** Every secret value `env` gives, directly or through a `*_FILE` variable (its content trimmed). */
export function startSecrets(env: Env, readFile: (path: string) => string = (p) => readFileSync(p, 'utf8')): string[] {
  const values = new Set<string>()
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || value === '') continue
    if (SECRET_VARIABLE.test(name)) values.add(value)
    else if (name.endsWith('_FILE') && SECRET_VARIABLE.test(name.slice(0, -'_FILE'.length))) {
      try {
        const content = readFile(value)
        values.add(content)
        values.add(content.trim())
      } catch {
        // A file that cannot be read holds nothing to hide; the refusal names it.
      }
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

/** `text` with each of `secrets` (in each spelling a line may hold) and anything shaped like a team key written `[REDACTED]`. */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  const forms = [...new Set(secrets.flatMap((s) => escapedForms(s)))].sort((a, b) => b.length - a.length)
  let out = withoutKeys(text)
  for (const form of forms) out = out.split(form).join('[REDACTED]')
  return out
}
