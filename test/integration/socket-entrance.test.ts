import { connect, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { request } from 'undici'
import { hashApiKey } from '../../src/access/api-keys.js'
import { drainListener } from '../../src/http/server.js'
import { startSandboxGateway, KEYS, type SandboxGateway } from '../helpers/sandbox-gateway.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// A connection's plain GETs are read by the gateway itself (http/socket-entrance.ts): a
// hit is answered there, before Node's parser makes a request of it; at the first request
// it declines, the connection is Node's. Node's 'request' event tells the two apart: a
// request answered on its connection never raises it.

const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07&byDate=1'
const OTHER = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-02-01&dateTo=2026-02-07&byDate=1'
// A year by date and campaign: an answer of tens of kilobytes.
const LARGE = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2025-01-01&dateTo=2025-12-31&byDate=1&byCampaign=1'
const COUNTED_KEY = 'rgw_test_counted_key_4444444444444444444444444'
const YAML = `
teams:
  all:
    keys: ["${hashApiKey(KEYS.all)}"]
    advertisers: ["*"]
    refresh: true
  counted:
    keys: ["${hashApiKey(COUNTED_KEY)}"]
    advertisers: ["*"]
    refresh: true
    rateLimit: { max: 10, window: 1m }
`

let env: SandboxGateway | undefined
afterEach(async () => {
  await env?.closeAfterTests()
  env = undefined
})

/** A gateway with REPORT in its memory (a MISS filled it), and a count of the requests Node's parser read. */
async function gatewayWithHit(yaml = YAML) {
  env = await startSandboxGateway({ yaml })
  const gw = env
  const read = await request(`${gw.url}${REPORT}`, { headers: { 'x-api-key': KEYS.all } })
  await read.body.dump()
  expect(read.headers['x-cache']).toBe('MISS')
  const node = { requests: 0 }
  gw.gw.proxy.server.on('request', () => node.requests++)
  return { ...gw, node }
}

interface Answer {
  status: number
  head: string
  headers: Record<string, string>
  body: string
}

/** One connection: what it received, read as answers (each framed by its content-length), and whether it closed. */
function open(port: number) {
  const socket: Socket = connect(port, '127.0.0.1')
  const chunks: Buffer[] = []
  let bytes = 0
  let closed = false
  socket.on('data', (chunk: Buffer) => {
    chunks.push(chunk)
    bytes += chunk.length
  })
  socket.on('error', () => undefined)
  socket.on('close', () => (closed = true))
  // Read as far as whole answers go, once: what is read is not read again.
  const read: Answer[] = []
  let rest = Buffer.alloc(0)
  const answers = (): Answer[] => {
    rest = Buffer.concat([rest, ...chunks.splice(0)])
    let at = 0
    for (;;) {
      const end = rest.indexOf('\r\n\r\n', at)
      if (end === -1) break
      const head = rest.toString('latin1', at, end)
      const headers: Record<string, string> = {}
      for (const line of head.split('\r\n').slice(1)) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim()
      const length = Number(headers['content-length'] ?? 0)
      if (rest.length < end + 4 + length) break
      read.push({ status: Number(head.slice(9, 12)), head, headers, body: rest.toString('latin1', end + 4, end + 4 + length) })
      at = end + 4 + length
    }
    rest = rest.subarray(at)
    return read
  }
  return { socket, answers, bytes: () => bytes, closed: () => closed }
}

const plainGet = (url: string, key: string, lines: string[] = []) => `GET ${url} HTTP/1.1\r\nHost: gw.test\r\nX-Api-Key: ${key}\r\n${lines.map((l) => `${l}\r\n`).join('')}\r\n`

/** An answer's head without what changes from one second to the next: its date, age, time left in the cache and seconds to the UTC day's end (`platform-usage`'s `reset`). */
const steady = (head: string) => head.replace(/^Date: .*$/m, 'Date: -').replace(/^age: \d+$/m, 'age: -').replace(/ttl=\d+/, 'ttl=-').replace(/reset=\d+/, 'reset=-')

describe('plain GETs read on their connection', () => {
  it('answers a hit there, with the bytes Node\'s path writes for it', async () => {
    const gw = await gatewayWithHit()
    const own = open(gw.port)
    own.socket.write(plainGet(REPORT, KEYS.all, ['x-request-id: same-id']))
    await waitFor('the hit answered', () => own.answers().length === 1)
    // Two spaces before a value: no plain GET, so Node's parser reads it (plain-get.ts).
    const nodes = open(gw.port)
    nodes.socket.write(plainGet(REPORT, KEYS.all, ['x-request-id:  same-id']))
    await waitFor('the hit answered through Node', () => nodes.answers().length === 1)
    const [mine, theirs] = [own.answers()[0] as Answer, nodes.answers()[0] as Answer]
    expect(mine.headers['x-cache']).toBe('HIT')
    expect(steady(mine.head)).toBe(steady(theirs.head))
    expect(mine.body).toBe(theirs.body)
    expect(gw.node.requests).toBe(1)
    // Its access line, as the router's would be: the bytes are those the caller received.
    await waitFor('its access line', () => gw.gw.logs.records().some((r) => r.msg === 'request' && r.reqId === 'same-id' && r.bytes === own.bytes()))
    const line = gw.gw.logs.records().find((r) => r.msg === 'request' && r.reqId === 'same-id' && r.bytes === own.bytes())
    expect(line).toMatchObject({ team: 'all', route: 'report', status: 200, cache: 'HIT', method: 'GET', path: '/api/v1/report/campaigns/get' })
    own.socket.destroy()
    nodes.socket.destroy()
  })

  it('names each request of a head repeated on a connection by an id of its own', async () => {
    const gw = await gatewayWithHit()
    const conn = open(gw.port)
    // A dashboard polling one report: the same bytes again, read as the head kept (plain-get.ts).
    for (let sent = 1; sent <= 3; sent += 1) {
      conn.socket.write(plainGet(REPORT, KEYS.all))
      await waitFor(`hit ${sent} answered`, () => conn.answers().length === sent)
    }
    const ids = conn.answers().map((a) => a.headers['x-request-id'])
    expect(conn.answers().map((a) => a.headers['x-cache'])).toEqual(['HIT', 'HIT', 'HIT'])
    expect(gw.node.requests).toBe(0)
    expect(new Set(ids).size).toBe(3)
    // Each access line names its own request.
    await waitFor('the access lines', () => ids.every((id) => gw.gw.logs.records().some((r) => r.msg === 'request' && r.reqId === id)))
    conn.socket.destroy()
  })

  it('writes a large hit\'s head and body apart, the same bytes as Node\'s path', async () => {
    const gw = await gatewayWithHit()
    const fill = await request(`${gw.url}${LARGE}`, { headers: { 'x-api-key': KEYS.all } })
    await fill.body.dump()
    const own = open(gw.port)
    own.socket.write(plainGet(LARGE, KEYS.all, ['x-request-id: large']))
    const nodes = open(gw.port)
    nodes.socket.write(plainGet(LARGE, KEYS.all, ['x-request-id:  large']))
    await waitFor('both answered', () => own.answers().length === 1 && nodes.answers().length === 1)
    const [mine, theirs] = [own.answers()[0] as Answer, nodes.answers()[0] as Answer]
    // Past the one write's 16 KiB (socket-entrance.ts).
    expect(mine.body.length).toBeGreaterThan(16 * 1024)
    expect(steady(mine.head)).toBe(steady(theirs.head))
    expect(mine.body).toBe(theirs.body)
    // Its fill (a URL not seen before) and the request left to Node.
    expect(gw.node.requests).toBe(2)
    own.socket.destroy()
    nodes.socket.destroy()
  })

  it('answers pipelined requests in their order, and hands the connection to Node at the first it declines', async () => {
    const gw = await gatewayWithHit()
    const conn = open(gw.port)
    conn.socket.write(
      plainGet(REPORT, KEYS.all, ['x-request-id: p1']) +
        plainGet(REPORT, KEYS.all, ['x-request-id: p2']) +
        plainGet(REPORT, KEYS.all, ['x-request-id:  p3']) +
        plainGet(REPORT, KEYS.all, ['x-request-id: p4']) +
        // With a key: a request without one is named by an id of the gateway's (compose/listeners.ts takesId).
        `GET /healthz HTTP/1.1\r\nHost: gw.test\r\nx-api-key: ${KEYS.all}\r\nx-request-id: p5\r\n\r\n`,
    )
    await waitFor('five answers', () => conn.answers().length === 5)
    expect(conn.answers().map((a) => [a.status, a.headers['x-request-id']])).toEqual([[200, 'p1'], [200, 'p2'], [200, 'p3'], [200, 'p4'], [200, 'p5']])
    // p1 and p2 on the connection; p3 (two spaces) and everything after it through Node.
    expect(gw.node.requests).toBe(3)
    conn.socket.destroy()
  })

  it('answers a request that asks to switch protocols with connection: close, and closes: a request pipelined behind it is never left unanswered on an open connection', async () => {
    const gw = await gatewayWithHit()
    for (const connection of ['Upgrade', 'keep-alive, upgrade']) {
      const conn = open(gw.port)
      conn.socket.write(plainGet(REPORT, KEYS.all, [`Connection: ${connection}`, 'Upgrade: websocket', 'x-request-id: u1']) + plainGet(REPORT, KEYS.all, ['x-request-id: u2']))
      await waitFor('the connection closed', () => conn.closed())
      expect(conn.answers().map((a) => [a.status, a.headers['x-request-id'], a.headers.connection])).toEqual([[200, 'u1', 'close']])
    }
  })

  it('leaves a caller that asks faster than it reads to Node, which paces it, and answers every request in order', async () => {
    const gw = await gatewayWithHit()
    const accepted = new Promise<Socket>((resolve) => gw.gw.proxy.server.once('connection', resolve))
    const conn = open(gw.port)
    const theirs = await accepted
    conn.socket.pause()
    // Asked in batches of whole requests, each read by the gateway before the next is sent,
    // so that only the backlog of answers hands the connection over, not a head cut in two.
    const batch = 50
    let sent = 0
    let bytes = 0
    while (gw.node.requests === 0 && sent < 10_000) {
      const text = Array.from({ length: batch }, (_, j) => plainGet(REPORT, KEYS.all, [`x-request-id: r${sent + j}`])).join('')
      conn.socket.write(text)
      bytes += text.length
      sent += batch
      await waitFor('the batch read', () => theirs.bytesRead === bytes)
    }
    // Its answers filled the connection's buffers: Node read the rest.
    expect(gw.node.requests).toBeGreaterThan(0)
    conn.socket.resume()
    await waitFor(() => `${sent} answers (${conn.answers().length} so far)`, () => conn.answers().length === sent, testTimeLeft(), 50)
    expect(conn.answers().map((a) => a.headers['x-request-id'])).toEqual(Array.from({ length: sent }, (_, i) => `r${i}`))
    conn.socket.destroy()
  })

  it('decides a read once: one declined on its connection goes on through Node with its decision, counted once', async () => {
    const gw = await gatewayWithHit()
    const remaining: string[] = []
    const ask = async (lines: string[]) => {
      const conn = open(gw.port)
      conn.socket.write(plainGet(REPORT, COUNTED_KEY, lines))
      await waitFor('an answer', () => conn.answers().length === 1)
      const answer = conn.answers()[0] as Answer
      remaining.push(`${answer.headers['x-cache']} ${/r=(\d+)/.exec(answer.headers.ratelimit ?? '')?.[1]}`)
      conn.socket.destroy()
    }
    await ask([])
    // A forced refresh is decided on the connection (counted) and declined there; the route
    // goes on with it (a copy younger than cache.refreshMinAge answers it).
    await ask(['cache-control: no-cache'])
    await ask([])
    expect(remaining).toEqual(['HIT 9', 'HIT 8', 'HIT 7'])
    // Through Node: the team's first read (the copy was filled by another team, whose call
    // of the URL serves no other team's, known-urls.ts) and the forced refresh.
    expect(gw.node.requests).toBe(2)
  })

  it('refuses a scoped team another team\'s copy on the connection as the route refuses it', async () => {
    const gw = await gatewayWithHit(`${YAML}  growth:\n    keys: ["${hashApiKey(KEYS.growth)}"]\n    advertisers: [102]\n`)
    // REPORT (advertiser 101) is fresh in memory, filled for the team of every advertiser.
    const conn = open(gw.port)
    conn.socket.write(plainGet(REPORT, KEYS.growth, ['x-request-id: prying']))
    await waitFor('an answer', () => conn.answers().length === 1)
    const answer = conn.answers()[0] as Answer
    expect([answer.status, JSON.parse(answer.body).code, answer.headers['x-cache']]).toEqual([403, 'GW_FORBIDDEN', undefined])
    expect(answer.body).not.toContain('"data"')
    conn.socket.destroy()
  })

  it('never reads a request smuggled in a GET\'s body as a request of its own', async () => {
    const gw = await gatewayWithHit()
    const smuggled = plainGet(OTHER, KEYS.all, ['x-request-id: smuggled'])
    const chunked = `${smuggled.length.toString(16)}\r\n${smuggled}\r\n0\r\n\r\n`
    for (const framing of [`Content-Length: ${smuggled.length}`, 'Transfer-Encoding: chunked']) {
      const conn = open(gw.port)
      const body = framing.startsWith('Content') ? smuggled : chunked
      conn.socket.write(plainGet(REPORT, KEYS.all, ['x-request-id: carrier', framing]) + body + plainGet(REPORT, KEYS.all, ['x-request-id: after']))
      await waitFor('two answers, or the connection closed', () => conn.answers().length >= 2 || conn.closed())
      const ids = conn.answers().map((a) => a.headers['x-request-id'])
      expect(ids).not.toContain('smuggled')
      expect(ids[0]).toBe('carrier')
      conn.socket.destroy()
    }
    expect(gw.sandbox.requests.some((r) => r.query.includes('2026-02-01'))).toBe(false)
  })

  it('answers a hit on a connection read here with connection: close once the listener drains', async () => {
    const gw = await gatewayWithHit()
    const conn = open(gw.port)
    conn.socket.write(plainGet(REPORT, KEYS.all, ['x-request-id: before']))
    await waitFor('the hit answered', () => conn.answers().length === 1)
    expect(gw.node.requests).toBe(0)
    drainListener(gw.gw.proxy)
    conn.socket.write(plainGet(REPORT, KEYS.all, ['x-request-id: draining']))
    await waitFor('the answer, and the connection closed', () => conn.answers().length === 2 && conn.closed())
    const answer = conn.answers()[1] as Answer
    expect([answer.status, answer.headers['x-request-id'], answer.headers.connection]).toEqual([200, 'draining', 'close'])
  })
})

describe('the deadlines of a connection read here', () => {
  const quick = `${YAML}server:\n  headersTimeout: 300ms\n  keepAliveTimeout: 300ms\n`

  it('a connection that says nothing is answered 408 after server.headersTimeout, as Node answers it', async () => {
    const gw = await gatewayWithHit(quick)
    const conn = open(gw.port)
    await waitFor('the 408, and the connection closed', () => conn.closed())
    expect(conn.answers().map((a) => [a.status, JSON.parse(a.body).code])).toEqual([[408, 'GW_REQUEST_TIMEOUT']])
    expect(gw.node.requests).toBe(0)
  })

  it('a kept-alive connection idle past server.keepAliveTimeout is closed', async () => {
    const gw = await gatewayWithHit(quick)
    const conn = open(gw.port)
    conn.socket.write(plainGet(REPORT, KEYS.all))
    await waitFor('the hit answered', () => conn.answers().length === 1)
    expect(conn.answers()[0]?.headers['keep-alive']).toBe('timeout=0')
    await waitFor('the connection closed', () => conn.closed())
    expect(gw.node.requests).toBe(0)
  })
})
