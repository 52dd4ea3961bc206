// A team's webhook secret (its `webhook.secret`, schema.ts): `whsec_` followed by the
// base64 of the key that signs its deliveries (jobs/webhook-signature.ts), as Standard
// Webhooks writes one.
export const WEBHOOK_SECRET_PREFIX = 'whsec_'

/**
 * What may be a webhook secret inside other text: `whsec_` and a run of the base64
 * alphabet, each character as itself or percent-encoded (a query, a path or a form spells
 * it so). Found by its form alone, never compared with a team's secret: what a refusal
 * writes of it is then the same whatever it is, and tells its caller nothing of any team's.
 */
const SECRET_IN_TEXT = /(?:w|%77)(?:h|%68)(?:s|%73)(?:e|%65)(?:c|%63)(?:_|%5[Ff])(?:[A-Za-z0-9+/=]|%(?:2[BbFf]|3[0-9Dd]|[46][1-9A-Fa-f]|5[0-9Aa]|7[0-9Aa]))+/g

/** `text` with anything shaped like a webhook secret written `[REDACTED]`, whatever it is. */
export function withoutWebhookSecrets(text: string): string {
  return text.includes(WEBHOOK_SECRET_PREFIX) || text.includes('%') ? text.replace(SECRET_IN_TEXT, '[REDACTED]') : text
}

/**
 * What of a webhook secret the log scrubs: the whole `whsec_…`, and the base64 of its key
 * alone (the HMAC key itself, as a receiver's code holds it) where it reads as a key's
 * random text: upper-case and lower-case letters and digits, not led by `/`. The secret is
 * the team's own and the schema takes any text of the base64 alphabet: a team's bare
 * `/api/v1/report/campaigns/get` (or a write's path) scrubbed that path from every other
 * team's request and audit lines and the operators' purge lines. A random key's base64
 * (24 characters or more) lacks one of the three kinds about once in 60 secrets; its whole
 * `whsec_` spelling is scrubbed still.
 */
export function webhookSecretSpellings(secret: string): string[] {
  if (!secret.startsWith(WEBHOOK_SECRET_PREFIX)) return [secret]
  const bare = secret.slice(WEBHOOK_SECRET_PREFIX.length)
  return randomLooking(bare) ? [secret, bare] : [secret]
}

/** Whether a base64 text reads as random bytes' rather than as a path or a word: each of upper case, lower case and digits in it, no leading `/`. */
function randomLooking(base64: string): boolean {
  return /[A-Z]/.test(base64) && /[a-z]/.test(base64) && /[0-9]/.test(base64) && !base64.startsWith('/')
}

/** The key bytes of a `whsec_<base64>` secret: what signs a delivery, whichever spelling of its base64 (padded or not) the secret has. */
export function webhookKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(WEBHOOK_SECRET_PREFIX) ? secret.slice(WEBHOOK_SECRET_PREFIX.length) : secret, 'base64')
}
