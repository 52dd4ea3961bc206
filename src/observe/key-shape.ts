// The shape of a team key (what access/api-keys.ts makes) in text the gateway writes down
// or passes on: found, decoded and redacted here, low enough for the logger and the spans
// to read it.

// A recognizable prefix lets secret scanners (GitHub, gitleaks) find a leaked key.
export const KEY_PREFIX = 'rgw_'

/**
 * What may be a key made by newApiKey inside other text: its prefix, then base64url, each
 * character as itself or percent-encoded (the platform decodes a query, a path and a form
 * before it reads them, and a caller may encode its user-agent).
 */
const KEY_SHAPE = '(?:r|%72)(?:g|%67)(?:w|%77)(?:_|%5[Ff])(?:[A-Za-z0-9_-]|%(?:2[Dd]|3[0-9]|[46][1-9A-Fa-f]|5[0-9AaFf]|7[0-9Aa])){16,}'
const KEY_IN_TEXT = new RegExp(KEY_SHAPE, 'g')
const A_KEY = new RegExp(KEY_SHAPE)
const ESCAPE = /%([0-9A-Fa-f]{2})/g

/** Whether `text` may hold a key at all: its prefix, or a percent-escape. */
function mayHoldKey(text: string): boolean {
  return text.includes(KEY_PREFIX) || text.includes('%')
}

/**
 * `text` with anything shaped like a team key replaced, for what the gateway writes down
 * or passes on of a request (every log line, a span's attributes, the headers it forwards):
 * a caller that put its key, or another team's, where no key belongs, finds it nowhere.
 */
export function withoutKeys(text: string): string {
  return mayHoldKey(text) ? text.replace(KEY_IN_TEXT, '[REDACTED]') : text
}

/** Whether `text` holds anything shaped like a team key. */
export function holdsKey(text: string): boolean {
  return mayHoldKey(text) && A_KEY.test(text)
}

/** Each thing shaped like a team key in `text`, decoded as the platform reads it. */
export function* keyCandidates(text: string): Generator<string> {
  if (!mayHoldKey(text)) return
  for (const [spelled] of text.matchAll(KEY_IN_TEXT)) yield spelled.replace(ESCAPE, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
}
