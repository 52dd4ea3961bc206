import { MAX_INPUT_VARS, phpArray, register, type PhpArray } from './php-input.js'
import { addHeaderLine, phpBoundary, phpLineBytes, phpLines, phpParams, type PhpHeader } from '../php/mime.js'

// How PHP fills `$_POST` from a `multipart/form-data` body (main/rfc1867.c,
// rfc1867_post_handler), so that the sandbox reads a multipart form as the platform does:
// each part that names a field and no file is a variable, its name read as any other
// (php-input.ts `register`: leading spaces dropped, spaces and dots as `_`, `a[]` nested).
// Its lines, boundary and head are read as PHP reads them (php/mime.ts, which the gateway's
// check of part names reads too).

/** Where the lines of `body` from `at` hold `delimiter` as a whole line (find_boundary), the end of that line; -1: none does. */
function afterDelimiter(body: string, lineBytes: number, at: number, delimiter: string): number {
  for (const line of phpLines(body, lineBytes, at)) {
    if (line.unread) break
    if (line.text === delimiter) return line.end
  }
  return -1
}

/** A part's head from `at` (multipart_buffer_headers): its lines up to an empty one, or to the last line get_line answers; and where its content starts. */
function headAt(body: string, lineBytes: number, at: number): { head: PhpHeader[]; start: number } {
  const head: PhpHeader[] = []
  let start = at
  for (const line of phpLines(body, lineBytes, at)) {
    if (line.unread) break
    start = line.end
    if (line.text === '') break
    addHeaderLine(head, line.text)
  }
  return { head, start }
}

/**
 * Where a part's content from `at` ends as multipart_buffer_read finds it: at the first LF
 * followed by `--` and the boundary (whatever follows it), or by a start of that the body ends
 * with (php_ap_memstr, partial); else at the body's end. `value` leaves out a CR before that LF.
 */
function contentAt(body: string, at: number, next: string): { value: string; end: number } {
  let bound = body.indexOf(next, at)
  for (let i = Math.max(at, body.length - next.length + 1); bound === -1 && i < body.length; i++) {
    if (next.startsWith(body.slice(i))) bound = i
  }
  if (bound === -1) return { value: body.slice(at), end: body.length }
  const value = body.slice(at, bound)
  return { value: value.endsWith('\r') ? value.slice(0, -1) : value, end: bound }
}

/** `$_POST` of a multipart form body read as latin1 bytes (as PHP reads bytes), its type's boundary; empty without one. */
export function parsePhpMultipart(body: string, contentType: string, maxVars: number = MAX_INPUT_VARS): PhpArray {
  const result = phpArray()
  const boundary = phpBoundary(contentType)
  if (boundary === null) return result
  const lineBytes = phpLineBytes(contentType)
  let count = 0
  for (let at = afterDelimiter(body, lineBytes, 0, `--${boundary}`); at !== -1; ) {
    const { head, start } = headAt(body, lineBytes, at)
    // php_mime_get_hdr_value: the first content-disposition of the head; a part without one is passed over.
    const disposition = head.find((header) => header.name.toLowerCase() === 'content-disposition')
    let name: string | null = null
    let file: string | null = null
    for (const [key, value] of phpParams(disposition?.value ?? '')) {
      if (key.toLowerCase() === 'name') name = value
      else if (key.toLowerCase() === 'filename') file = value
    }
    // A disposition that names neither a field nor a file ends the form ("File Upload Mime headers garbled").
    if (disposition !== undefined && name === null && file === null) break
    let end = start
    if (name !== null && file === null) {
      const content = contentAt(body, start, `\n--${boundary}`)
      if (++count > maxVars) break
      register(result, name, Buffer.from(content.value, 'latin1').toString('utf8'))
      end = content.end
    } else if (file !== null && file !== '') end = contentAt(body, start, `\n--${boundary}`).end
    at = afterDelimiter(body, lineBytes, end, `--${boundary}`)
  }
  return result
}
