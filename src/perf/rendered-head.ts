import { ServerResponse } from 'node:http'
import { systemClock } from '../clock.js'

// A cache hit's status line and headers, written as text rendered ahead instead of
// through writeHead. writeHead checks every name and value against the
// token and field-value grammars and concatenates them one by one, on every answer:
// with the ten headers of a hit that was about 1.5 µs, a tenth of what the whole hit
// costs on the benchmark's machine. Most of a hit's header text is the same for every
// answer of one cache entry, so it is rendered and checked once per entry
// (reports/report-reply.ts), and a hit adds only what changes: its age, request id and
// rate-limit state.
//
// Node has no public call that takes a rendered head, so this sets what writeHead would
// have set (`_header`, `_headerSent`) and leaves the rest of the answer (end, keep-alive,
// the next request on the connection) to Node. It writes the same bytes writeHead would
// for the same list of headers, Date, Connection and Keep-Alive included;
// test/integration/rendered-head.test.ts compares the two on the wire, so a Node release
// that changes what writeHead writes fails that test rather than the callers. Anything
// out of the ordinary (a response of another class, a connection that is to close, a limit of requests per connection,
// a caller expecting 100-continue, an answer begun already, a Node whose responses lack
// these fields) is left to writeHead: takesRenderedHead says which.

/** The fields of a ServerResponse that writeHead and _storeHeader read and set. */
interface ResponseInternals {
  _header: string | null
  _headerSent: boolean
  _keepAliveTimeout: number
  _maxRequestsPerSocket: number | undefined
  _defaultKeepAlive: boolean
  _removedConnection: boolean
  _expect_continue: boolean
  shouldKeepAlive: boolean
  maxRequestsOnConnectionReached: boolean
  chunkedEncoding: boolean
  sendDate: boolean
}

// Node's own test of a field value (checkInvalidHeaderChar in lib/_http_common.js).
const INVALID_VALUE = /[^\t\x20-\x7e\x80-\xff]/
// Node's own test of a field name (checkIsHttpToken).
const TOKEN = /^[\^_`a-zA-Z\-0-9!#$%&'*+.|~]+$/

/** Whether `value` may be written as a header value as it is: what writeHead would accept. */
export function isFieldValue(value: string): boolean {
  return !INVALID_VALUE.test(value)
}

/**
 * The header lines of a flat list of names and values (`['etag', '"x"', …]`), checked
 * as writeHead checks them; null when a name or value would be refused. For text that is
 * rendered once and written many times: a hit adds its own lines to it.
 */
export function renderHeaderLines(fields: readonly string[]): string | null {
  const lines: string[] = []
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i] as string
    const value = fields[i + 1] as string
    if (!TOKEN.test(name) || !isFieldValue(value)) return null
    lines.push(`${name}: ${value}\r\n`)
  }
  // join makes one flat string: kept for an entry's life, it holds no pieces.
  return lines.join('')
}

/** The status line of a 200, rendered once. */
export const STATUS_200 = 'HTTP/1.1 200 OK\r\n'

// Node writes the Date header from a string it makes once a second and forgets when that
// second ends, by a timer (lib/internal/http.js, utcDate); so does this: an answer reads
// no clock for it (a reading of the wall clock is a call into V8's runtime).
let dateLine: string | null = null

function forgetDateLine(): void {
  dateLine = null
}

function currentDateLine(): string {
  if (dateLine === null) {
    const ms = systemClock.now()
    dateLine = `Date: ${new Date(ms).toUTCString()}\r\n`
    setTimeout(forgetDateLine, 1000 - (ms % 1000)).unref()
  }
  return dateLine
}

// The end of a kept-alive answer's head as Node writes it; one server's answers all
// share it, so it is made again only when the server's settings change.
let tailTimeout = -1
let tailMax = -1
let tailDefault = false
let tail = ''

function keepAliveTail(timeout: number, max: number, defaultKeepAlive: boolean): string {
  if (timeout !== tailTimeout || max !== tailMax || defaultKeepAlive !== tailDefault) {
    tailTimeout = timeout
    tailMax = max
    tailDefault = defaultKeepAlive
    const keepAlive = timeout && tailDefault ? `Keep-Alive: timeout=${Math.floor(timeout / 1000)}${max > 0 ? `, max=${max}` : ''}\r\n` : ''
    tail = `Connection: keep-alive\r\n${keepAlive}\r\n`
  }
  return tail
}

/**
 * The end of a kept-alive 200's head as Node writes it on a server whose
 * `keepAliveTimeout` is `timeoutMs` and which sets no limit of requests per connection:
 * Date, Connection, Keep-Alive and the empty line. For an answer written on the
 * connection itself (http/socket-entrance.ts).
 */
export function keptAliveHeadEnd(timeoutMs: number): string {
  return currentDateLine() + keepAliveTail(timeoutMs, 0, true)
}

/**
 * Whether `res` can take a rendered head: Node's own ServerResponse (not a subclass that
 * watches writeHead, as light-my-request's inject does), a kept-alive answer not begun,
 * on a connection with requests left, to a caller not waiting for 100-continue.
 * Otherwise writeHead must decide (a closing connection, a request limit, ...).
 */
export function takesRenderedHead(res: ServerResponse): boolean {
  const r = res as unknown as ResponseInternals
  return (
    res.constructor === ServerResponse &&
    r._header === null &&
    typeof r._headerSent === 'boolean' &&
    typeof r._keepAliveTimeout === 'number' &&
    r.shouldKeepAlive === true &&
    r.maxRequestsOnConnectionReached === false &&
    r._expect_continue === false &&
    r._removedConnection === false &&
    r.chunkedEncoding === false &&
    r.sendDate === true
  )
}

/**
 * Answers 200 with `lines` (a status line and checked header lines, content-length
 * among them, as renderHeaderLines makes them) and `body`, as
 * `res.writeHead(200, fields); res.end(body)` would. Only for a response that
 * takesRenderedHead.
 */
export function writeRenderedHead(res: ServerResponse, lines: string, body: Buffer): void {
  const r = res as unknown as ResponseInternals
  res.statusCode = 200
  res.statusMessage = 'OK'
  r._header = lines + currentDateLine() + keepAliveTail(r._keepAliveTimeout, ~~(r._maxRequestsPerSocket ?? 0), r._defaultKeepAlive)
  r._headerSent = false
  res.end(body)
}
