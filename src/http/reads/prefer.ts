type Header = string | string[] | undefined

/**
 * Whether a request's `Prefer` header (RFC 7240) asks for `respond-async`: preferences are
 * separated by commas, each a token (case-insensitive) with optional `=value` and
 * `;`-parameters; the header may be sent more than once.
 */
export function prefersAsync(header: Header): boolean {
  if (header === undefined) return false
  const text = typeof header === 'string' ? header : header.join(',')
  if (!/respond-async/i.test(text)) return false
  return text.split(',').some((p) => p.split(';', 1)[0]?.split('=', 1)[0]?.trim().toLowerCase() === 'respond-async')
}
