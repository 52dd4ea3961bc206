import { connect } from 'node:net'
import type { NewCampaign } from '../../src/sandbox/catalog.js'
import { startSandbox, type Sandbox, type SandboxOptions, type SandboxRequestRecord } from '../../src/sandbox/sandbox.js'
import { buildGateway, closeAfterTest, KEYS, listen, TEAMS_YAML, testConfig, type TestGateway } from './build-gateway.js'

/** A sandbox, and a gateway in front of it listening on a loopback port. */
export interface SandboxGateway {
  sandbox: Sandbox
  gw: TestGateway
  /** http://127.0.0.1:<port> of the gateway's proxy listener. */
  url: string
  port: number
  /** Requests the sandbox received, less the gateway's own campaign-ownership lookups. */
  callerRequests(): SandboxRequestRecord[]
  /** Closes the gateway (close(): the close a test may look at), then the sandbox. */
  close(): Promise<void>
  /** close() once the tests that used it are over: the gateway by closeAfterTest. */
  closeAfterTests(): Promise<void>
}

export interface SandboxGatewayOptions {
  /** Teams and other config file content; default SANDBOX_TEAMS_YAML. */
  yaml?: string
  /** Extra environment on top of PLATFORM_BASE_URL and PLATFORM_TOKEN. */
  env?: Record<string, string>
  /** The sandbox's options (the platform's quirks it models). */
  sandbox?: SandboxOptions
}

/**
 * TEAMS_YAML (its `teams:` last, for withUploader), the gateway told where the sandbox lists
 * an account's creative sets (the sandbox's own route: the platform documents none).
 */
export const SANDBOX_TEAMS_YAML = `ownership:\n  creativeSets: { check: lookup, listPath: /api/v1/creative-set/get }\n${TEAMS_YAML}`

/** The x-request-id prefix of the gateway's own ownership lookups (see teams/campaign-owners.ts). */
export const OWNERSHIP_REQUEST_PREFIX = 'ownership-'

export async function startSandboxGateway(opts: SandboxGatewayOptions = {}): Promise<SandboxGateway> {
  const sandbox = await startSandbox(opts.sandbox)
  const gw = await listen(
    await buildGateway(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ...opts.env }, opts.yaml ?? SANDBOX_TEAMS_YAML)),
  )
  // The start's token probe is the gateway's own call: what callers send starts here.
  sandbox.clearRequests()
  return {
    sandbox,
    gw,
    port: gw.port,
    url: gw.url,
    callerRequests: () =>
      sandbox.requests.filter((r) => !String(r.headers['x-request-id'] ?? '').startsWith(OWNERSHIP_REQUEST_PREFIX)),
    async close() {
      await gw.close()
      await sandbox.close()
    },
    async closeAfterTests() {
      await closeAfterTest(gw)
      await sandbox.close()
    },
  }
}

/** A valid `banner/create` body for the sandbox: a paused campaign of account `userId` showing a creative set of its own (its first campaign's), `fields` over the defaults. */
export function newCampaign(userId: number, fields: Partial<NewCampaign> = {}): NewCampaign {
  return {
    userId,
    name: 'Test campaign',
    adDomain: 'example.com',
    clickUrl: 'https://example.com/',
    autoStart: false,
    dates: { from: '2026-03-01', to: '2026-03-31' },
    country: 'KE',
    bid: 1.5,
    budget: { daily: 10, total: 100 },
    creativeSetIds: [creativeSetOf(userId)],
    ...fields,
  }
}

/** The creative set of account `userId`'s first generated campaign in the sandbox (catalog.ts). */
export function creativeSetOf(userId: number): number {
  return (userId * 1000 + 1) * 10 + 1
}

export interface RawResponse {
  status: number
  headers: Record<string, string>
  body: string
  /** Everything the socket received, status line included. */
  text: string
}

/** Whether a new connection to `port` is refused (a listener that closed). */
export function connectionRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(port, '127.0.0.1')
    probe.once('connect', () => {
      probe.destroy()
      resolve(false)
    })
    probe.once('error', () => resolve(true))
  })
}

/**
 * Sends bytes as they are over a socket: no client-side normalization of the target
 * (fragments, control characters), and any header or body spelling. The request must
 * ask for `Connection: close` (rawHttp adds it when absent). `from`: the loopback address
 * it is sent from (127.0.0.2, ...), for a caller of an address of its own.
 */
export function rawRequest(port: number, bytes: string | Buffer, timeoutMs = 5000, from?: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', ...(from === undefined ? {} : { localAddress: from }) })
    const chunks: Buffer[] = []
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', reject)
    socket.setTimeout(timeoutMs, () => socket.destroy())
    socket.on('close', () => resolve(parseRaw(Buffer.concat(chunks).toString('latin1'))))
    socket.write(bytes)
  })
}

/** A head a listener refuses whatever the path, sent to a route, and its answer. */
export interface BrokenHeadAnswer {
  method: string
  url: string
  /** The route's path as its document names it. */
  path: string
  expected: 400 | 408
  answer: RawResponse
}

/**
 * For each route (method, URL, documented path), heads every listener refuses whatever the
 * path, with `header` (a line ending in CRLF: the key or token) in each: two malformed (400),
 * sent to `port`, and one never finished (408, at server.headersTimeout), sent to
 * `unfinishedPort`. Each on a connection of its own, all at once, so the 408s wait out their
 * deadline together. The 408s' listener has a short headersTimeout to wait out; the malformed
 * heads go to one with the default (20 s): Node counts a head's time from the connection's
 * accept and checks it every second, so a whole head a loaded machine reads more than a short
 * headersTimeout after the accept is answered 408 rather than 400.
 */
export async function brokenHeadAnswers(port: number, routes: readonly (readonly [string, string, string])[], header: string, unfinishedPort: number): Promise<BrokenHeadAnswer[]> {
  const asked = routes.flatMap(([method, url, path]) =>
    (
      [
        [400, `${method} ${url} HTTP/1.1\r\nhost: 127.0.0.1\r\nhost: 127.0.0.2\r\n${header}connection: close\r\n\r\n`],
        [400, `${method} ${url} HTTP/1.1\r\nhost: 127.0.0.1\r\n${header}a header without its colon\r\nconnection: close\r\n\r\n`],
        [408, `${method} ${url} HTTP/1.1\r\nhost: 127.0.0.1\r\n${header}`],
      ] as const
    ).map(([expected, bytes]) => ({ method, url, path, expected, bytes })),
  )
  const answers = await Promise.all(asked.map(({ expected, bytes }) => rawRequest(expected === 408 ? unfinishedPort : port, bytes, 10_000)))
  return asked.map(({ method, url, path, expected }, i) => ({ method, url, path, expected, answer: answers[i]! }))
}

/** A whole HTTP/1.1 request from its parts; `x-api-key` from `key` unless null. */
export function rawHttp(
  method: string,
  target: string,
  opts: { key?: string | null; headers?: Record<string, string>; body?: string | Buffer } = {},
): Buffer {
  const key = opts.key === undefined ? KEYS.all : opts.key
  const headers: Record<string, string> = { host: '127.0.0.1', connection: 'close', ...(opts.headers ?? {}) }
  if (key !== null) headers['x-api-key'] = key
  const body = opts.body === undefined ? Buffer.alloc(0) : Buffer.from(opts.body)
  if (opts.body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-length' || h.toLowerCase() === 'transfer-encoding')) {
    headers['content-length'] = String(body.length)
  }
  const head = `${method} ${target} HTTP/1.1\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n`
  return Buffer.concat([Buffer.from(head, 'latin1'), body])
}

function parseRaw(text: string): RawResponse {
  const end = text.indexOf('\r\n\r\n')
  const head = end === -1 ? text : text.slice(0, end)
  const [statusLine = '', ...lines] = head.split('\r\n')
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(':')
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  let body = end === -1 ? '' : text.slice(end + 4)
  if (headers['transfer-encoding'] === 'chunked') body = dechunk(body)
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0), headers, body, text }
}

function dechunk(body: string): string {
  let out = ''
  let rest = body
  for (;;) {
    const eol = rest.indexOf('\r\n')
    if (eol === -1) return out
    const size = parseInt(rest.slice(0, eol), 16)
    if (!size) return out
    out += rest.slice(eol + 2, eol + 2 + size)
    rest = rest.slice(eol + 2 + size + 2)
  }
}

export { KEYS, TEAMS_YAML }
