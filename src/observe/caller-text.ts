// What the gateway writes of a caller's text (an access line's path or account, a refusal's
// message naming what it refused): a caller chooses how long that is, so each is written
// within a bound, its first characters and how many were left out. Anything in it shaped
// like a team key or a webhook secret is written `[REDACTED]` first, whatever it is: cut
// first, a secret longer than the bound would leave its head for no redaction to find.

import { withoutWebhookSecrets } from '../config/webhook-secret.js'
import { withoutKeys } from './key-shape.js'

/** The most of one account a line or a refusal writes. */
export const ACCOUNT_CHARS = 64
/** The most of a path (or other free text of the caller's) a line or a refusal writes. */
export const CALLER_TEXT_CHARS = 1024

/** `text` as written when within `max` characters, else its first `max` and how many were left out. */
export function boundedText(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (+${text.length - max} characters)`
}

/** A caller's text as a refusal writes it: what is shaped like a team key or a webhook secret `[REDACTED]`, then within `max` characters. */
function shownText(text: string, max: number): string {
  return boundedText(withoutKeys(withoutWebhookSecrets(text)), max)
}

/** A value of the caller's as a refusal echoes it (a report parameter's): a string as it is, anything else as JSON, as shownText writes it within ACCOUNT_CHARS. */
export function shownValue(value: unknown): string {
  return shownText(typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value)), ACCOUNT_CHARS)
}

/** A name of the caller's (a parameter's) as a refusal quotes it: in quotes, as shownText writes it within ACCOUNT_CHARS. */
export function shownQuoted(text: string): string {
  return JSON.stringify(shownText(text, ACCOUNT_CHARS))
}

/** An account as a refusal names it: a string as shownQuoted writes it, anything else as shownValue does. */
export function shownAccount(account: unknown): string {
  return typeof account === 'string' ? shownQuoted(account) : shownValue(account)
}

/** A path as a refusal names it, as shownText writes it within CALLER_TEXT_CHARS. */
export function shownPath(path: string): string {
  return shownText(path, CALLER_TEXT_CHARS)
}
