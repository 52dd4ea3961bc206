/**
 * What a failed connection to the platform tells a caller: a system error's code as it
 * is (ECONNREFUSED, ECONNRESET…), the HTTP client's own (UND_ERR_*) in words, since no
 * framework code reaches a caller (contract, "Errors"); the error itself stays in the log.
 * `address` names whose address a TLS handshake answered in plain HTTP was (a webhook
 * receiver's, for a delivery).
 */
export function connectionFailure(err: unknown, address = "the platform's address"): string {
  const code = (err as { code?: unknown } | null)?.code
  if (typeof code !== 'string' || code === '') return 'connection error'
  if (PLAIN_HTTP_TLS_CODES.has(code)) return `${code} (TLS failed: ${address} answers in plain HTTP, not TLS)`
  return code.startsWith('UND_ERR_') ? (CLIENT_FAILURES[code] ?? 'connection error') : code
}

/** OpenSSL's codes for a TLS handshake answered in plain HTTP (an https:// address of a plain HTTP server). */
const PLAIN_HTTP_TLS_CODES: ReadonlySet<string> = new Set(['ERR_SSL_WRONG_VERSION_NUMBER', 'ERR_SSL_PACKET_LENGTH_TOO_LONG', 'ERR_SSL_HTTP_REQUEST'])

const CLIENT_FAILURES: Record<string, string> = {
  UND_ERR_SOCKET: 'connection reset',
  UND_ERR_CLOSED: 'connection closed',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'answer cut short',
}
