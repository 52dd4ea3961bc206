// What an audit line of a team's write holds of the caller's text (its path, the accounts it
// named), which a viewer's token reads (GET /admin/audit): every run of text that may hold a
// team's webhook secret written `[REDACTED]` whole by its form, before the log scrubs each
// team's secret by value (logger.ts addScrubbed: the whole `whsec_…` and its bare base64).
// A run is a stretch of the base64 alphabet (`+`, `/` and `=` also percent-encoded, the
// spellings that scrub finds), `whsec_` in any of its spellings, and `[REDACTED]`; a secret
// anywhere in the text lies inside one such run, so the scrub finds nothing left, and the
// line reads the same whether the caller's text held a team's secret or a guess at it.

/** The shortest bare base64 a webhook secret has (18 bytes, schema.ts): a run at least this long may be one. */
export const SHORTEST_KEY_CHARS = 24

const REDACTED = '[REDACTED]'

// `whsec_` in its spellings (webhook-secret.ts SECRET_IN_TEXT; tried first, so that its
// letters are not taken one by one and the run then ended at `_`), a redaction already made,
// or one character of the base64 alphabet (`+`, `/` and `=` percent-encoded too).
const PREFIX = /(?:w|%77)(?:h|%68)(?:s|%73)(?:e|%65)(?:c|%63)(?:_|%5[Ff])/
const PART_SOURCE = `${PREFIX.source}|\\[REDACTED\\]|[A-Za-z0-9+/=]|%(?:2[BbFf]|3[Dd])`
const RUN = new RegExp(`(?:${PART_SOURCE})+`, 'g')
const PART = new RegExp(PART_SOURCE, 'g')

/** Whether a run may hold a webhook secret: it holds a redaction or `whsec_`, or is a random key's length with upper case, lower case and digits. */
function mayHoldSecret(run: string): boolean {
  if (run.includes(REDACTED) || PREFIX.test(run)) return true
  return (run.match(PART)?.length ?? 0) >= SHORTEST_KEY_CHARS && /[A-Z]/.test(run) && /[a-z]/.test(run) && /[0-9]/.test(run)
}

/** `text` with each run that may hold a webhook secret written `[REDACTED]` whole. */
export function withoutKeyRuns(text: string): string {
  return text.replace(RUN, (run) => (mayHoldSecret(run) ? REDACTED : run))
}

/** Whether `text` holds a run that may hold a webhook secret (one withoutKeyRuns writes `[REDACTED]`, a redaction among them). */
export function holdsKeyRun(text: string): boolean {
  return (text.match(RUN) ?? []).some(mayHoldSecret)
}
