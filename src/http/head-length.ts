import { REFUSAL_READ_BYTES } from '../platform/client/debug-fields.js'

/**
 * The content-length of a forwarded HEAD's answer: the length its GET's content is sent
 * with, and no other (RFC 9110, 8.6). The platform's answer to the HEAD says the length of
 * its GET's (`platformLength`), which the gateway's GET passes on as it came where the
 * caller accepts its coding (or it has none: `accepted`), but for a 204 or a 304 (no
 * content) and a refusal the GET reads whole (a 4xx of at most REFUSAL_READ_BYTES, whose
 * Laravel debug fields it drops: only its body shows them). null: none is sent, as the GET
 * of a coding the caller does not accept is decoded as it streams (chunked).
 */
export function headLength(status: number, platformLength: string | undefined, accepted: boolean): string | null {
  if (!accepted || status === 204 || status === 304 || platformLength === undefined || !/^\d{1,15}$/.test(platformLength)) return null
  const length = Number(platformLength)
  if (status >= 400 && length > 0 && length <= REFUSAL_READ_BYTES) return null
  return String(length)
}
