import { describe, expect, it } from 'vitest'
import { KEYS, rawRequest } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'
import { ANSWERS_AHEAD, ANSWERS_AHEAD_IN_ALL } from '../../src/http/pipelined-answers.js'
import { itLoggedNoSecret, newCampaign, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// Several requests in one write on one connection (HTTP/1.1 pipelining): the gateway
// reads plain GETs on the connection itself and hands anything else to Node's parser
// (http/socket-entrance.ts), so the requests of one write may be read two ways. Each is
// answered as itself, in order: its own key, its own refusal; a request the parser
// refuses is answered after the answers due before it, and never named by their lines.

const sg = useAttackGateway()
const H = 'host: 127.0.0.1\r\n'
const REPORT = `/api/v1/report/campaigns/get?advertiserId=101&${REPORT_DATES}`
const CREATE = '/api/v1/campaign/banner/create'

interface Answer {
  status: number
  headers: Record<string, string>
  body: string
}

/** Every answer written on a connection, in order (each has a content-length). */
function answersOf(text: string): Answer[] {
  const answers: Answer[] = []
  let at = 0
  while (at < text.length) {
    const end = text.indexOf('\r\n\r\n', at)
    if (end === -1) break
    const [statusLine = '', ...lines] = text.slice(at, end).split('\r\n')
    const headers: Record<string, string> = {}
    for (const line of lines) {
      const colon = line.indexOf(':')
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
    }
    const length = Number(headers['content-length'] ?? 0)
    answers.push({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0), headers, body: text.slice(end + 4, end + 4 + length) })
    at = end + 4 + length
  }
  return answers
}

/** One write of `requests` on a new connection (the last asks to close it): the answers. */
async function pipelined(requests: string[]): Promise<Answer[]> {
  const res = await rawRequest(sg.port, requests.join(''))
  return answersOf(res.text)
}

const get = (target: string, extra = ''): string => `GET ${target} HTTP/1.1\r\n${H}${extra}\r\n`
const key = (k: string): string => `x-api-key: ${k}\r\n`

describe('pipelined requests', () => {
  it('of different keys in one write are each answered for their own key, read on the connection or by Node', async () => {
    // A copy to answer from.
    expect((await pipelined([get(REPORT, `${key(KEYS.all)}connection: close\r\n`)]))[0]?.status).toBe(200)
    // Plain heads, read on the connection: team growth may read 101, a key of no team none.
    const plain = await pipelined([get(REPORT, key(KEYS.growth)), get(REPORT.replace('=101', '=103'), key(KEYS.growth)), get(REPORT), get(REPORT, `${key(KEYS.all)}connection: close\r\n`)])
    expect(plain.map((a) => [a.status, a.headers['x-cache'] ?? null])).toEqual([[200, 'HIT'], [403, null], [401, null], [200, 'HIT']])
    // The first head is not plain (two spaces before its value): Node reads every request of the write.
    const node = await pipelined([get(REPORT, `x-api-key:  ${KEYS.growth}\r\n`), get(REPORT.replace('=101', '=103'), key(KEYS.growth)), get(REPORT), get(REPORT, `${key(KEYS.all)}connection: close\r\n`)])
    expect(node.map((a) => [a.status, a.headers['x-cache'] ?? null])).toEqual([[200, 'HIT'], [403, null], [401, null], [200, 'HIT']])
  })

  it('a request after a 4xx on the same connection is answered as itself', async () => {
    const broken = `POST /api/v1/report/campaigns/get HTTP/1.1\r\n${H}${key(KEYS.all)}content-type: application/json\r\ncontent-length: 5\r\n\r\n{"a":`
    const answers = await pipelined([broken, get(REPORT), get(REPORT, `${key(KEYS.growth)}connection: close\r\n`)])
    expect(answers.map((a) => a.status)).toEqual([400, 401, 200])
  })

  it('a method the parser does not know behind another request is answered after it, naming no method of the request before it', async () => {
    // The DELETE is Node's to read (not a plain GET), and the parser meets FOO in the same read.
    const answers = await pipelined([`DELETE /api/v1/campaign/banner/delete/101001 HTTP/1.1\r\n${H}${key(KEYS.growth)}\r\n`, `FOO /api/v1/jobs HTTP/1.1\r\n${H}connection: close\r\n\r\n`])
    // The DELETE's own answer first (team growth may not write), then the refusal, which
    // cannot tell FOO's line from the DELETE's bytes before it: malformed, no method named.
    expect(answers.map((a) => a.status)).toEqual([403, 400])
    expect(JSON.parse((answers[1] as Answer).body)).toMatchObject({ code: 'GW_BAD_REQUEST', message: expect.stringMatching(/^malformed HTTP request/) as unknown })
    // Alone in its read, FOO is named by its own line: 405 with its path's methods.
    const alone = await pipelined([`FOO /api/v1/jobs HTTP/1.1\r\n${H}connection: close\r\n\r\n`])
    expect(alone.map((a) => [a.status, a.headers.allow])).toEqual([[405, 'OPTIONS']])
  })

  it('a write at the platform ahead of a refused request is answered first, and the refusal after it: the caller is never told its write was not sent', async () => {
    sg.sandbox.setRouteFailure(CREATE, { kind: 'held', times: 1 })
    const body = JSON.stringify(newCampaign(101))
    const write = `POST ${CREATE} HTTP/1.1\r\n${H}${key(KEYS.writer)}content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
    const answering = pipelined([write, `FOO /api/v1/jobs HTTP/1.1\r\n${H}connection: close\r\n\r\n`])
    await waitFor('the create at the platform', () => sg.callerRequests().some((r) => r.path === CREATE))
    sg.sandbox.releaseHeld()
    const answers = await answering
    expect(answers.map((a) => a.status)).toEqual([201, 400])
    expect(JSON.parse((answers[0] as Answer).body)).toMatchObject({ data: { id: expect.any(Number) as unknown } })
    expect(JSON.parse((answers[1] as Answer).body)).toMatchObject({ code: 'GW_BAD_REQUEST' })
  })

  // Node emits every request of a read at once: an answer made ahead of its turn is held whole
  // until the answers before it have gone, outside every budget (black-box pass, session 134:
  // 35 connections of 700 pipelined hits each behind a slow call took a replica past 512 MiB).
  it(`makes at most ${ANSWERS_AHEAD} answers of a connection ahead of their turn: the rest are handled at their turn, each answered in order`, async () => {
    expect((await pipelined([get(REPORT, `${key(KEYS.all)}connection: close\r\n`)]))[0]?.status).toBe(200)
    const made = () => sg.gw.logs.records().filter((r) => r.msg === 'request' && r.path === REPORT.split('?')[0] && r.cache === 'HIT').length
    const before = made()
    sg.sandbox.setRouteFailure('/api/v1/campaign/101001', { kind: 'held', times: 1 })
    const hits = Array.from({ length: 30 }, (_, i) => get(REPORT, `${key(KEYS.all)}${i === 29 ? 'connection: close\r\n' : ''}`))
    const answering = pipelined([get('/api/v1/campaign/101001', key(KEYS.all)), ...hits])
    await waitFor('the held call at the platform', () => sg.callerRequests().some((r) => r.path === '/api/v1/campaign/101001'))
    await waitFor(`${ANSWERS_AHEAD} hits made behind it`, () => made() - before === ANSWERS_AHEAD)
    // The request after them waits for its turn: a read of the connection's further requests would have made it by now.
    await new Promise((resolve) => setImmediate(resolve))
    expect(made() - before).toBe(ANSWERS_AHEAD)
    sg.sandbox.releaseHeld()
    const answers = await answering
    expect(answers.map((a) => a.status)).toEqual([expect.any(Number), ...hits.map(() => 200)])
    expect(made() - before).toBe(30)
  })

  // 800 connections of 30 unread GETs each, 8 made ahead on each, took a replica past 512 MiB
  // (black-box pass F): the answers made ahead are bounded across connections too.
  it(`makes at most ${ANSWERS_AHEAD_IN_ALL} answers ahead of their turn across every connection`, async () => {
    expect((await pipelined([get(REPORT, `${key(KEYS.all)}connection: close\r\n`)]))[0]?.status).toBe(200)
    const made = () => sg.gw.logs.records().filter((r) => r.msg === 'request' && r.path === REPORT.split('?')[0] && r.cache === 'HIT').length
    const before = made()
    const connections = ANSWERS_AHEAD_IN_ALL / ANSWERS_AHEAD + 2
    sg.sandbox.setRouteFailure('/api/v1/campaign/101001', { kind: 'held', times: connections })
    const hits = Array.from({ length: ANSWERS_AHEAD + 2 }, (_, i) => get(REPORT, `${key(KEYS.all)}${i === ANSWERS_AHEAD + 1 ? 'connection: close\r\n' : ''}`))
    const answering = Array.from({ length: connections }, () => pipelined([get('/api/v1/campaign/101001', key(KEYS.all)), ...hits]))
    await waitFor(`${ANSWERS_AHEAD_IN_ALL} hits made behind the calls held`, () => made() - before === ANSWERS_AHEAD_IN_ALL)
    await new Promise((resolve) => setImmediate(resolve))
    expect(made() - before).toBe(ANSWERS_AHEAD_IN_ALL)
    // Each held call let go as it comes (the calls past the platform seats come later): every connection's answers in order, every hit made.
    let answered = false
    const all = Promise.all(answering).finally(() => (answered = true))
    await waitFor('every connection answered', () => {
      sg.sandbox.releaseHeld()
      return answered
    })
    for (const answers of await all) expect(answers.map((a) => a.status)).toEqual([expect.any(Number), ...hits.map(() => 200)])
    expect(made() - before).toBe(connections * hits.length)
  })

  // A request with a body left unread kept Node's parser waiting for it: 408 at
  // server.requestTimeout though it came whole (black-box pass F). It is handled at once.
  it('handles a pipelined request with a body at once, behind answers made ahead', async () => {
    sg.sandbox.setRouteFailure('/api/v1/campaign/101001', { kind: 'held', times: 1 })
    const body = JSON.stringify({ userId: 101 })
    const list = `POST /api/v1/campaign/get HTTP/1.1\r\n${H}${key(KEYS.all)}content-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`
    // Small answers ahead of it (401s: no key), which leave Node's parser reading on.
    const refused = Array.from({ length: ANSWERS_AHEAD + 1 }, () => get(REPORT))
    const answering = pipelined([get('/api/v1/campaign/101001', key(KEYS.all)), ...refused, list])
    await waitFor('the list call at the platform while the first call is held', () => sg.callerRequests().some((r) => r.path === '/api/v1/campaign/get'))
    expect(sg.sandbox.concurrency().held).toBe(1)
    sg.sandbox.releaseHeld()
    expect((await answering).map((a) => a.status)).toEqual([expect.any(Number), ...refused.map(() => 401), 200])
  })

  it('bytes left of a body the gateway did not read are no request line: 400, naming no method', async () => {
    // A 401 before the body is read: Node reads the 5 bytes of the body, and the parser meets the rest.
    const answers = await pipelined([`POST /api/v1/campaign/get HTTP/1.1\r\n${H}content-type: application/json\r\ncontent-length: 5\r\n\r\n`, `GET /api/v1/campaign/get HTTP/1.1\r\n${H}connection: close\r\n\r\n`])
    expect(answers.map((a) => a.status)).toEqual([401, 400])
    expect(JSON.parse((answers[1] as Answer).body)).toMatchObject({ code: 'GW_BAD_REQUEST', message: expect.stringMatching(/^malformed HTTP request/) as unknown })
    expect(sg.callerRequests()).toEqual([])
  })
})

itLoggedNoSecret(sg)
