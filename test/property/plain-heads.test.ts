import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { readPlainGet } from '../../src/http/plain-get.js'
import { useNodeReads } from '../helpers/node-reads.js'

// A head the gateway reads on its connection (http/plain-get.ts) is read by Node's parser
// the same way: the same target, the same headers, and its end where Node's next request
// begins. Heads are drawn from pieces that two HTTP parsers have read two ways (framing
// headers, whitespace around a colon or a value, bare CR or LF, line folds, bytes past
// ASCII, a second Host); each is sent to a real node:http server followed by a marker
// request. Whenever readPlainGet takes a head, Node must read exactly it and then the
// marker. Seeded: PLAIN_HEADS_SEED=<n> replays a run.

const SEED = Number(process.env.PLAIN_HEADS_SEED ?? 54)
const MARKER = 'GET /marker HTTP/1.1\r\nHost: m\r\n\r\n'

const nodeReads = useNodeReads()

/** Mostly `usual`, now and then one of `risky`: heads are taken often enough to check, and meet every risk. */
const mostly = (usual: string[], risky: string[]) => fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...usual) }, { weight: 1, arbitrary: fc.constantFrom(...risky) })

const requestLine = mostly(
  ['GET /api/v1/report/x?a=1 HTTP/1.1', 'GET /api/v1/report/x?a=%41&b=1,2 HTTP/1.1', 'GET / HTTP/1.1'],
  ['GET /a b HTTP/1.1', 'GET  /a HTTP/1.1', 'GET /a  HTTP/1.1', 'get /a HTTP/1.1', 'GET /a HTTP/1.0', 'GET http://h/a HTTP/1.1', 'GET /a#f HTTP/1.1', 'GET /a\x7f HTTP/1.1', 'POST /a HTTP/1.1'],
)
const name = mostly(['Host', 'host', 'X-Api-Key', 'Authorization', 'X-A', 'Accept-Encoding'], ['Content-Length', 'Transfer-Encoding', 'Connection', 'TE', 'Expect', 'X_A', 'X A', '', 'Host\t', 'x-\xe9'])
const colon = mostly([': ', ':'], [':  ', ' : ', ' :', ':\t'])
const value = mostly(['a', 'gw.test', 'gzip, br', 'a b', 'a\tb', '', '"q"', 'keep-alive'], ['chunked', '0', '5', '40', 'Keep-Alive', 'close', ' a', 'a ', 'a\t', '\x00', '\xe9', 'a\rb', 'a\nb'])
const ending = mostly(['\r\n'], ['\n', '\r'])
const line = fc.oneof(
  { weight: 9, arbitrary: fc.tuple(name, colon, value, ending).map(([n, c, v, e]) => `${n}${c}${v}${e}`) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(' ', '\t'), value).map(([w, v]) => `${w}${v}\r\n`) },
)
const head = fc.tuple(requestLine, ending, fc.array(line, { maxLength: 6 }), mostly(['\r\n'], ['\n'])).map(([first, end, lines, last]) => `${first}${end}${lines.join('')}${last}`)

describe('a head taken on the connection', () => {
  it.each([
    ['GET /api/v1/report/x HTTP/1.1\r\nHost: gw.local\r\nX-Api-Key: team-a-key\r\n\r\n'],
    ['GET /api/v1/report/x HTTP/1.1\r\nhost:gw.local\r\nconnection: Keep-Alive\r\naccept-encoding: gzip, br\r\nx-empty:\r\n\r\n'],
    ['GET /api/v1/report/x HTTP/1.1\r\nHost: gw.local:8080\r\nAuthorization: Bearer abc.def\r\nUser-Agent: curl/8.5.0 (x86_64)\r\nX-Tab: a\tb\r\n\r\n'],
    ["GET /api/v1/report/a%20b/c?x=%2F&y=1,2;z=@:!$ HTTP/1.1\r\nHost: h\r\n\r\n"],
  ])('%j is read as Node reads it', async (text) => {
    const bytes = Buffer.from(text + MARKER, 'latin1')
    const plain = readPlainGet(bytes, 0)
    const read = await nodeReads(bytes)
    expect(read.map((r) => r.url)).toEqual([plain?.url, '/marker'])
    expect({ ...read[0]?.headers }).toEqual({ ...plain?.headers })
  })

  it('is read by Node\'s parser the same way, and ends where Node\'s next request begins', async () => {
    let taken = 0
    await fc.assert(
      fc.asyncProperty(head, async (text) => {
        const bytes = Buffer.from(text + MARKER, 'latin1')
        const plain = readPlainGet(bytes, 0)
        if (plain === null) return
        taken++
        const read = await nodeReads(bytes)
        expect(read.map((r) => r.url), JSON.stringify(text)).toEqual([plain.url, '/marker'])
        expect({ ...read[0]?.headers }, JSON.stringify(text)).toEqual({ ...plain.headers })
        expect(bytes.toString('latin1', plain.length), JSON.stringify(text)).toBe(MARKER)
      }),
      { seed: SEED, numRuns: 3000 },
    )
    // The draw is not all refusals: some heads are taken, and checked.
    expect(taken).toBeGreaterThan(300)
  })
})
