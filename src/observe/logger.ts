import type { LoggerOptions } from 'pino'
import { escapedForms } from './secret-forms.js'
import { withoutKeys } from './key-shape.js'
import { withoutWebhookSecrets } from '../config/webhook-secret.js'
import { failureFields } from './failure-log.js'
import { SecretSearch } from './secret-search.js'
import type { Pieces } from '../pieces.js'
import { ACCOUNT_CHARS, boundedText, CALLER_TEXT_CHARS } from './caller-text.js'
import { escapedLineBreakers } from './line-escapes.js'

// Paths that can hold a secret in anything we log: request and response headers, the
// config, token replies. Values are also scrubbed by `SecretSet.scrub` below, so a
// secret that ends up somewhere unexpected (an error message, a URL) is caught too, as
// it is, escaped or percent-encoded (secret-forms.ts), and so is anything shaped like a
// team key (a key in a path, an x-request-id, a user-agent: api-keys.ts withoutKeys).
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers["x-api-key"]',
  'headers.cookie',
  'headers["set-cookie"]',
  'config.admin.token',
  'config.admin.viewerToken',
  'config.gatewaySecret',
  'config.secrets',
  'config.scrubbedSecrets',
  'config.shortLoginSecrets',
  'config.settings[*].value',
  'config.credentials.*.token',
  'config.credentials.*.login.password',
  'config.credentials.*.login.clientSecret',
  'token',
  'access_token',
  'refresh_token',
  'password',
  'client_secret',
  '*.token',
  '*.access_token',
  '*.refresh_token',
  '*.password',
  '*.client_secret',
]

/**
 * The set of secret values in use, and every one used before (a platform token that was
 * replaced, or rotated away at run time, may still be valid); tokens rotate, so it is mutable.
 */
/** The fewest characters of a value SecretSet redacts: a shorter one would scrub ordinary words (config validation keeps secrets longer). */
export const SHORTEST_REDACTED = 6

export class SecretSet {
  // The spellings of every value the log scrubs (`add`, `addScrubbed`, `addLogOnly`).
  readonly #logged = new Spellings()
  // Those a copy a caller of the gateway reads scrubs too (`add`, `addScrubbed`): every one but a word a team may write.
  readonly #shown = new Spellings()
  // The spellings of the gateway's own secrets alone (`add`), which an answer scrubs by value.
  readonly #own = new Spellings()
  // The gateway's own secrets, which `holds` finds (a value scrubbed alone is not one).
  readonly #secrets = new Set<string>()
  readonly #search = new SecretSearch()
  // Secrets known by their digests alone (the named tokens of ADMIN_TOKENS_FILE), once the composition gives their search.
  #digestHeld: (text: string) => boolean = () => false

  /** How many secrets `holds` finds; it only grows, so a text searched at one size holds none of those added since only if searched again. */
  get size(): number {
    return this.#secrets.size
  }

  add(value: string | null | undefined): void {
    if (!value || value.length < SHORTEST_REDACTED || this.#secrets.has(value)) return
    this.#secrets.add(value)
    // Each of its spellings the gateway's own text may hold: escaped in a JSON string, as every line writes it, percent-encoded…
    const forms = escapedForms(value)
    for (const spellings of [this.#logged, this.#shown, this.#own]) spellings.add(forms)
    // As the platform would read it: as it is, or in a JSON body as the gateway writes one
    // (JSON.stringify); and its UTF-8 bytes read a character a byte, as a body passed on as
    // it comes is searched (the same text for an ASCII secret).
    this.#search.add(value)
    this.#search.add(JSON.stringify(value).slice(1, -1))
    this.#search.add(Buffer.from(value, 'utf8').toString('latin1'))
  }

  /**
   * A value the log scrubs, as `add` makes it, that is no secret of the gateway's: `holds`
   * does not find it. A team's webhook secret is its own (the team makes it, its receiver
   * holds it, and the schema takes any text of the base64 alphabet, `/` included): taken
   * for one of the gateway's, a secret a team chose to spell a path every team calls
   * (`whsec_/api/v1/report/campaigns/get`) made each other team's call of it a guess, 400,
   * and that team suspended.
   */
  addScrubbed(value: string | null | undefined): void {
    if (!value || value.length < SHORTEST_REDACTED || this.#shown.has(value)) return
    const forms = escapedForms(value)
    this.#logged.add(forms)
    this.#shown.add(forms)
  }

  /**
   * A value the log alone scrubs: no secret of the gateway's (`holds` does not find it), nor
   * scrubbed from a copy a caller reads (`scrubShown`). A login's password or client secret
   * too short to search for is a word a team may write (config/login-secrets.ts): a copy of
   * a team's text that a viewer reads, `[REDACTED]` where it held the word and as sent where
   * it held another, would answer a guess at it.
   */
  addLogOnly(value: string | null | undefined): void {
    if (!value || value.length < SHORTEST_REDACTED || this.#logged.has(value)) return
    this.#logged.add(escapedForms(value))
  }

  /**
   * Whether `text` (a request target, a form or JSON body as the gateway sends it on, a
   * header) holds a secret, as it is or as the platform decodes it (percent-escapes, `+` for
   * a space): found by a hashed comparison (secret-search.ts), which tells no caller how
   * much of a secret it guessed.
   */
  holds(text: string): boolean {
    // `searching` at once, without its generators: this is asked of every request's target and id (a microsecond more a call with them).
    return this.#search.in(text) || this.#search.inDecoded(text)
  }

  /**
   * `holds` in pieces of `piece` windows of a text (secret-search.ts), yielding between two,
   * so that a large body's search takes turns on the event loop (access/admission.ts).
   */
  *searching(text: string, piece: number): Pieces<boolean> {
    return (yield* this.#search.inPieces(text, piece)) || (yield* this.#search.inDecodedPieces(text, piece))
  }

  /**
   * The search of the secrets known by their digests alone (access/admin-auth.ts heldInLogged):
   * no scrub finds them in a line, so a caller's text holding one is written `[REDACTED]` whole.
   */
  searchByDigest(held: (text: string) => boolean): void {
    this.#digestHeld = held
  }

  /** Whether `text` holds a secret known by its digest alone. */
  heldByDigest(text: string): boolean {
    return this.#digestHeld(text)
  }

  /**
   * Whether `text` holds, as written, a value the log scrubs (`add`, `addScrubbed`,
   * `addLogOnly`): one not searched for in requests too (a team's webhook secret, a short
   * login password). What only operators read (a span) cleans such a text whole, as a line
   * writes it `[REDACTED]`.
   */
  holdsScrubbed(text: string): boolean {
    return this.#logged.in(text)
  }

  /** `line` with every value the log scrubs and anything shaped like a team key (api-keys.ts) written `[REDACTED]`. */
  scrub(written: string): string {
    return this.#logged.redact(withoutKeys(written))
  }

  /**
   * `text` as a copy a caller of the gateway reads writes it (a team's write in the audit
   * trail a viewer's token reads): as `scrub` does, but for the values the log alone scrubs
   * (`addLogOnly`), which it writes as they are.
   */
  scrubShown(written: string): string {
    return this.#shown.redact(withoutKeys(written))
  }

  /**
   * `text` as an answer (a refusal's message) writes it: anything shaped like a team key or a
   * webhook secret `[REDACTED]` whatever it is, and the gateway's own secrets by value. A
   * team's webhook secret is not looked for by value: it is no secret of the gateway's, so a
   * request holding it is not refused, and an echo of the caller's text `[REDACTED]` only when
   * it held another team's secret would confirm a guess at it (its bare base64 is echoed as
   * sent, as any other text of the caller's).
   */
  scrubAnswer(written: string): string {
    return this.#own.redact(withoutKeys(withoutWebhookSecrets(written)))
  }
}

/** Spellings of values, and the one pattern finding any of them, made when first asked after a change. */
class Spellings {
  readonly #values = new Set<string>()
  #pattern: RegExp | null = null

  has(value: string): boolean {
    return this.#values.has(value)
  }

  add(forms: Iterable<string>): void {
    for (const form of forms) this.#values.add(form)
    this.#pattern = null
  }

  /** Whether `text` holds one of them. */
  in(text: string): boolean {
    const pattern = this.#patternOf()
    return pattern !== null && text.search(pattern) !== -1
  }

  /** `text` with each of them written `[REDACTED]`. */
  redact(text: string): string {
    const pattern = this.#patternOf()
    return pattern === null ? text : text.replace(pattern, '[REDACTED]')
  }

  #patternOf(): RegExp | null {
    if (this.#values.size === 0) return null
    this.#pattern ??= alternation(this.#values)
    return this.#pattern
  }
}

/** One pattern finding any of `values`, the longest first (a secret inside another is redacted with it). */
function alternation(values: Set<string>): RegExp {
  return new RegExp([...values].sort((a, b) => b.length - a.length).map(escapeRegExp).join('|'), 'g')
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/** How a log writes a text with its secrets `[REDACTED]` (SecretSet.scrub or scrubShown). */
type Scrub = (text: string) => string

// pino's number of the `error` level: the lowest whose lines carry an error's stack.
const ERROR_LEVEL = 50

// Fields of a line whose text the caller chose, each within CALLER_TEXT_CHARS: a head
// of Node's 16 KiB would make a line a log driver splits (Docker's json-file at 16 KiB),
// whose request no parser then reads, and each call would write as much again.
const CALLER_TEXTS = ['userAgent', 'path'] as const

// The access line's accounts (`advertiser`), as the caller wrote them: a caller chooses how
// many a body names and how long each is. A line holds the first ACCOUNTS_LOGGED, each in
// ACCOUNT_CHARS characters at most (a number as it is), and counts the rest
// (`advertisersLeftOut`): a body of 50,000 accounts made a line of 290 KB.
const ACCOUNTS_LOGGED = 50

/**
 * `text` as a line holds it: redacted first (a secret or key across the cut is redacted
 * whole, never written in part), then its first `max` characters and how many were left out.
 */
function loggedText(text: string, scrub: Scrub, max = CALLER_TEXT_CHARS): string {
  return boundedText(scrub(text), max)
}

/** One account of `advertiser` as a line holds it: as written when short, else its text (JSON for an object) cut to ACCOUNT_CHARS. */
function loggedAccount(account: unknown, scrub: Scrub): unknown {
  if (typeof account !== 'string' && (typeof account !== 'object' || account === null)) return account
  const text = typeof account === 'string' ? account : JSON.stringify(account)
  return text.length <= ACCOUNT_CHARS ? account : loggedText(text, scrub, ACCOUNT_CHARS)
}

/** The fields that bound a line's `advertiser` (one account or a list), or null where it is within bounds as it is. */
function boundedAccounts(accounts: unknown, scrub: Scrub): Record<string, unknown> | null {
  if (!Array.isArray(accounts)) {
    const written = loggedAccount(accounts, scrub)
    return written === accounts ? null : { advertiser: written }
  }
  const leftOut = Math.max(0, accounts.length - ACCOUNTS_LOGGED)
  const shown = leftOut > 0 ? accounts.slice(0, ACCOUNTS_LOGGED) : accounts
  const written = shown.map((a: unknown) => loggedAccount(a, scrub))
  if (leftOut === 0 && written.every((a, i) => a === shown[i])) return null
  return leftOut > 0 ? { advertiser: written, advertisersLeftOut: leftOut } : { advertiser: written }
}

/**
 * Whether a caller's `text` holds a secret the line's scrub does not find: in a spelling
 * the platform would decode (a character of it percent-escaped, a `+` for a space), found
 * by the search admission refuses by, asked only of a text that decoding changes (the
 * scrub finds a secret as it is, and each spelling the gateway writes); or one known by
 * its digest alone (a named admin token).
 */
function hiddenFromScrub(text: string, secrets: SecretSet): boolean {
  return ((text.includes('%') || text.includes('+')) && secrets.holds(text)) || secrets.heldByDigest(text)
}

/**
 * The options of a log at `level`: its redaction, its bounds of a caller's text, and its
 * scrub of every line, `secrets.scrub` unless given (the audit trail's copies a viewer reads
 * scrub as `secrets.scrubShown` does: access/audit-trail.ts). A caller's text is scrubbed
 * before it is cut, so that a value across the cut is redacted whole, never written in part.
 */
export function loggerOptions(level: string, secrets: SecretSet, scrub: Scrub = (text) => secrets.scrub(text)): LoggerOptions {
  return {
    level,
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    formatters: {
      // A copy where a text is bounded or redacted: the object logged may be the caller's own.
      log(fields) {
        let out = fields
        for (const name of CALLER_TEXTS) {
          const value = fields[name]
          if (typeof value !== 'string') continue
          if (hiddenFromScrub(value, secrets)) out = { ...out, [name]: '[REDACTED]' }
          else if (value.length > CALLER_TEXT_CHARS) out = { ...out, [name]: loggedText(value, scrub) }
        }
        const accounts = fields.advertiser
        if (accounts !== undefined && accounts !== null && typeof accounts !== 'number') {
          const bounded = boundedAccounts(accounts, scrub)
          if (bounded !== null) out = { ...out, ...bounded }
        }
        return out
      },
    },
    hooks: {
      // Scrubbed as written, then each character that breaks a line to some reader escaped (line-escapes.ts).
      streamWrite: (line) => escapedLineBreakers(scrub(line)),
      logMethod(args, method, at) {
        // A line below `error` is a failure the gateway expected and handled: its `err` is
        // written as a handled failure's fields, without a stack (contract, "Logs").
        const [fields] = args as unknown[]
        if (at < ERROR_LEVEL && typeof fields === 'object' && fields !== null && (fields as { err?: unknown }).err instanceof Error) {
          const { err, ...rest } = fields as { err: Error; code?: unknown }
          args[0] = { ...rest, ...failureFields(typeof rest.code === 'string' ? rest.code : undefined, err) }
        }
        method.apply(this, args)
      },
    },
    serializers: {
      req: (req: { method: string; url: string; id: string; headers: Record<string, unknown> }) => ({
        id: req.id,
        method: req.method,
        url: req.url.split('?')[0] ?? '',
      }),
    },
  }
}
