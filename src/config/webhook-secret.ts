// A team's webhook secret (its `webhook.secret`, schema.ts): `whsec_` followed by the
// base64 of the key that signs its deliveries (jobs/webhook-signature.ts), as Standard
// Webhooks writes one.
export const WEBHOOK_SECRET_PREFIX = 'whsec_'

/** What of a webhook secret the log scrubs: the whole `whsec_…`, and the base64 of its key alone (the HMAC key itself, as a receiver's code holds it). */
export function webhookSecretSpellings(secret: string): string[] {
  return secret.startsWith(WEBHOOK_SECRET_PREFIX) ? [secret, secret.slice(WEBHOOK_SECRET_PREFIX.length)] : [secret]
}

/** The key bytes of a `whsec_<base64>` secret: what signs a delivery, whichever spelling of its base64 (padded or not) the secret has. */
export function webhookKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(WEBHOOK_SECRET_PREFIX) ? secret.slice(WEBHOOK_SECRET_PREFIX.length) : secret, 'base64')
}
