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

// A URL of a setting: one with a scheme (`https://…`, `redis://…`), or a path on a base URL (`/oauth/token?…`).
const URL_SHAPE = /^([a-z][a-z0-9+.-]*:\/\/|\/)/i

/**
 * A URL setting as GET /admin/config shows it, which a viewer's token reads: its scheme,
 * host, port and path; a userinfo, a query and a fragment (where a password, a client
 * secret or a signed token rides) each replaced by `***`, so that the reader sees one
 * is there and never what it holds. A URL with none of them (and no `@`) is shown as
 * configured; one no URL parser reads, as its scheme alone.
 */
export function shownUrl(value: unknown): unknown {
  if (typeof value !== 'string' || !URL_SHAPE.test(value)) return value
  if (!/[@?#]/.test(value)) return value
  const relative = value.startsWith('/')
  if (!URL.canParse(value, 'http://base.invalid')) return `${relative ? '/' : (/^[^:]*:\/\//.exec(value) as RegExpExecArray)[0]}***`
  const url = new URL(value, 'http://base.invalid')
  const userinfo = url.username !== '' || url.password !== ''
  // An `@` the parser read as no userinfo's (`https://user/secret@host`) is masked as one all the same.
  const where = maskUrlPassword(relative ? url.pathname : `${url.protocol}//${userinfo ? '***@' : ''}${url.host}${url.pathname}`) as string
  return `${where}${value.includes('?') ? '?***' : ''}${value.includes('#') ? '#***' : ''}`
}

/**
 * A URL-like value for a message that refuses it (one no setting takes as it is): as
 * `shownUrl` shows a URL; a reference to another host (`//host/path`, `/\host`) keeps its
 * host and path; what has no URL's shape loses what follows a `?` or `#` and what comes
 * before an `@`.
 */
export function shownUrlText(value: string): string {
  const hidden = `${value.includes('?') ? '?***' : ''}${value.includes('#') ? '#***' : ''}`
  if (/^\/[/\\]/.test(value) && URL.canParse(value, 'http://base.invalid')) {
    const url = new URL(value, 'http://base.invalid')
    return `//${url.username !== '' || url.password !== '' ? '***@' : ''}${url.host}${url.pathname}${hidden}`
  }
  if (URL_SHAPE.test(value)) return shownUrl(value) as string
  return `${maskUrlPassword(value.replace(/[?#][^]*$/, '')) as string}${hidden}`
}
