import { createHmac } from 'node:crypto'
import { webhookKey } from '../config/webhook-secret.js'

// The Standard Webhooks signature (standardwebhooks.com): `v1,` then the base64 of the
// HMAC-SHA256 of `{id}.{timestamp}.{body}`, keyed by the bytes of the secret, which is
// `whsec_` followed by their base64. The receiver computes the same from the
// `webhook-id`, `webhook-timestamp` headers and the body as received.

/** The `webhook-signature` header value of `body` sent as message `id` at `timestampSec` (epoch seconds). */
export function webhookSignature(secret: string, id: string, timestampSec: number, body: string): string {
  return `v1,${createHmac('sha256', webhookKey(secret)).update(`${id}.${timestampSec}.${body}`).digest('base64')}`
}
