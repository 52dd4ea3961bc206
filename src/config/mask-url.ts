/**
 * `scheme://user:password@host` with what comes before the host replaced, for messages
 * (base URLs, warm's gateway URL): everything up to the last `@`, as a URL parser reads
 * it (a password may hold `@`), whatever the shape before it (`redis//:password@host`,
 * `user:password@host`), so that a malformed URL is masked too.
 */
export function maskUrlPassword(value: unknown): unknown {
  if (typeof value !== 'string') return value
  return value.replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^]*@/i, '$1***@')
}
