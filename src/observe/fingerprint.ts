import { createHash, createHmac, randomBytes } from 'node:crypto'
import { sha256Hex } from '../config/secret-digest.js'

// A fingerprint names a secret (a token, a password, a client id) in admin answers, audit
// and log lines without giving it away. It is keyed: a viewer who reads one cannot check
// a guess of a secret a person chose (a password, a short ADMIN_TOKEN) offline, as a plain
// hash would let it. The key is derived from GATEWAY_SECRET where it is set, so that
// replicas sharing it name a secret alike; else it is drawn once per process, and a
// secret's fingerprint changes at each restart.
const PROCESS_KEY = randomBytes(32)

function fingerprintKey(gatewaySecret: string | null): Buffer {
  return gatewaySecret ? createHash('sha256').update(`report-gateway fingerprint\0${gatewaySecret}`).digest() : PROCESS_KEY
}

/**
 * The fingerprint of a secret known only by its SHA-256 (hex): 12 hex digits of
 * HMAC-SHA256 over that hex, under the key of `gatewaySecret`; equal to fingerprint() of
 * the secret itself.
 */
export function digestFingerprint(sha256: string, gatewaySecret: string | null): string {
  return createHmac('sha256', fingerprintKey(gatewaySecret)).update(sha256, 'utf8').digest('hex').slice(0, 12)
}

/** A short, stable name for `secret` that admin answers and logs may show (above). */
export function fingerprint(secret: string, gatewaySecret: string | null): string {
  return digestFingerprint(sha256Hex(secret), gatewaySecret)
}
