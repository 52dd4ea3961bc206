import { createHmac } from 'node:crypto'
import { WEBHOOK_SECRET_PREFIX } from '../config/webhook-secret.js'

// The Standard Webhooks signature (standardwebhooks.com): `v1,` then the base64 of the
// HMAC-SHA256 of `{id}.{timestamp}.{body}`, keyed by the bytes of the secret, which is
// `whsec_` followed by their base64. The receiver computes the same from the
// `webhook-id`, `webhook-timestamp` headers and the body as received.

/** The key bytes of a `whsec_<base64>` secret. */
export function webhookKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(WEBHOOK_SECRET_PREFIX) ? secret.slice(WEBHOOK_SECRET_PREFIX.length) : secret, 'base64')
}

/** The `webhook-signature` header value of `body` sent as message `id` at `timestampSec` (epoch seconds). */
export function webhookSignature(secret: string, id: string, timestampSec: number, body: string): string {
  return `v1,${createHmac('sha256', webhookKey(secret)).update(`${id}.${timestampSec}.${body}`).digest('base64')}`
}
