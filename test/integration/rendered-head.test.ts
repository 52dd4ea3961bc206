import { createServer, validateHeaderName, validateHeaderValue, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { STATUS_200, isFieldValue, keptAliveHeadEnd, renderHeaderLines, takesRenderedHead, writeRenderedHead } from '../../src/perf/rendered-head.js'
import { waitFor } from '../helpers/wait.js'

// A hit's head rendered ahead and written without writeHead: on the wire it
// must be what writeHead writes for the same headers, and whatever writeHead decides for
// itself (closing the connection, 100-continue, a request limit) must be left to it.
// Run against the Node the tests run on: a release that changes what writeHead writes
// fails here.

const BODY = Buffer.from(JSON.stringify({ data: [{ day: '2026-01-01', clicks: 7 }] }))
const FIELDS = [
  'x-cache', 'HIT',
  'etag', '"AwEEZv_taN9B2P44IYpCH4"',
  'vary', 'accept-encoding',
  'cache-control', 'private, max-age=86400',
  'content-type', 'application/json',
  'content-length', String(BODY.length),
  'age', '3',
  'cache-status', 'report-gateway; hit; ttl=86397',
  'x-request-id', 'req-1',
  'ratelimit-policy', '"default";q=600;w=60',
  'ratelimit', '"default";r=599;t=42',
]

const servers: Server[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve).closeAllConnections())))
})

/** A server answering every request with FIELDS and BODY: rendered ahead, or through writeHead. */
async function serve(rendered: boolean, setUp: (server: Server) => void = () => undefined) {
  const written: boolean[] = []
  const lines = STATUS_200 + (renderHeaderLines(FIELDS) as string)
  const server = createServer((_req: IncomingMessage, res: ServerResponse) => {
    const ok = rendered && takesRenderedHead(res)
    written.push(ok)
    if (ok) {
      writeRenderedHead(res, lines, BODY)
    } else {
      res.writeHead(200, FIELDS)
      res.end(BODY)
    }
  })
  server.keepAliveTimeout = 72_000
  setUp(server)
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { port: (server.address() as AddressInfo).port, written }
}

/** Sends `raw` on one connection and reads until `answers` answers have come (or the server closed it). */
function exchange(port: number, raw: string, answers: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1' })
    let text = ''
    const stop = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no ${answers} answers within 10 s: ${JSON.stringify(text)}`))
    }, 10_000)
    const done = () => {
      clearTimeout(stop)
      socket.destroy()
      resolve(text)
    }
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1')
      if (text.split(BODY.toString('latin1')).length - 1 >= answers) done()
    })
    socket.on('end', done)
    socket.on('error', reject)
    socket.write(raw)
  })
}

// The Date line differs only when the two answers straddle a second.
const withoutDate = (text: string) => text.replace(/\r\nDate: [^\r]+\r\n/g, '\r\nDate: -\r\n')

const GET = 'GET /r HTTP/1.1\r\nhost: x\r\n\r\n'

describe('a head rendered ahead', () => {
  it('puts the same bytes on the wire as writeHead, Date, Connection and Keep-Alive included', async () => {
    const rendered = await serve(true)
    const plain = await serve(false)
    const [a, b] = await Promise.all([exchange(rendered.port, GET, 1), exchange(plain.port, GET, 1)])
    expect(rendered.written).toEqual([true])
    expect(plain.written).toEqual([false])
    expect(withoutDate(a)).toBe(withoutDate(b))
    expect(a).toMatch(/\r\nDate: \w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT\r\nConnection: keep-alive\r\nKeep-Alive: timeout=72\r\n\r\n/)
    expect(a.endsWith(`\r\n\r\n${BODY.toString('latin1')}`)).toBe(true)
  })

  it('writes the Date of the second it is written in, made anew once that second ends', async () => {
    const dateOf = (head: string) => /^Date: (.*)\r\n/.exec(head)?.[1]
    const first = dateOf(keptAliveHeadEnd(5000))
    await waitFor('the next second', () => new Date().toUTCString() !== first)
    await waitFor("the next second's Date", () => dateOf(keptAliveHeadEnd(5000)) === new Date().toUTCString())
  })

  it('answers pipelined requests on one connection in order, and keeps it open', async () => {
    const rendered = await serve(true)
    const plain = await serve(false)
    const three = GET.repeat(3)
    const [a, b] = await Promise.all([exchange(rendered.port, three, 3), exchange(plain.port, three, 3)])
    expect(rendered.written).toEqual([true, true, true])
    expect(withoutDate(a)).toBe(withoutDate(b))
    expect(a.match(/HTTP\/1\.1 200 OK\r\n/g)).toHaveLength(3)
  })

  it.each([
    ['an HTTP/1.0 request (the connection closes)', 'GET /r HTTP/1.0\r\n\r\n'],
    ['connection: close', 'GET /r HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n'],
    ['expect: 100-continue', 'GET /r HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\n\r\n'],
  ])('leaves %s to writeHead, with the same answer', async (_what, raw) => {
    const rendered = await serve(true)
    const plain = await serve(false)
    const [a, b] = await Promise.all([exchange(rendered.port, raw, 1), exchange(plain.port, raw, 1)])
    expect(rendered.written).toEqual([false])
    expect(withoutDate(a)).toBe(withoutDate(b))
  })

  it("leaves the last request a connection may carry (server.maxRequestsPerSocket) to writeHead, and writes Keep-Alive's max before it", async () => {
    const limit = (server: Server) => {
      server.maxRequestsPerSocket = 2
    }
    const rendered = await serve(true, limit)
    const plain = await serve(false, limit)
    const [a, b] = await Promise.all([exchange(rendered.port, GET.repeat(2), 2), exchange(plain.port, GET.repeat(2), 2)])
    expect(rendered.written).toEqual([true, false])
    expect(withoutDate(a)).toBe(withoutDate(b))
    expect(a).toContain('Keep-Alive: timeout=72, max=2\r\n')
    expect(a).toContain('Connection: close\r\n')
  })

  it('takes no answer already begun', async () => {
    let second: boolean | undefined
    const server = createServer((_req, res) => {
      res.writeHead(200, ['content-length', String(BODY.length)])
      second = takesRenderedHead(res)
      res.end(BODY)
    })
    servers.push(server)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const text = await exchange((server.address() as AddressInfo).port, GET, 1)
    expect(second).toBe(false)
    expect(text.match(/HTTP\/1\.1/g)).toHaveLength(1)
  })
})

describe('rendering header lines', () => {
  it('refuses what writeHead would refuse: a line break or control character in a value, a name that is no token', () => {
    expect(renderHeaderLines(['content-type', 'application/json\r\nset-cookie: a=1'])).toBeNull()
    expect(renderHeaderLines(['content-type', 'application/json\nx: 1'])).toBeNull()
    expect(renderHeaderLines(['content-type', 'a\u0000b'])).toBeNull()
    expect(renderHeaderLines(['content-type', 'caf\u0100'])).toBeNull()
    expect(renderHeaderLines(['x cache', 'HIT'])).toBeNull()
    expect(renderHeaderLines(['x-cache:', 'HIT'])).toBeNull()
    expect(renderHeaderLines(['x-cache', 'HIT', 'vary', 'accept-encoding'])).toBe('x-cache: HIT\r\nvary: accept-encoding\r\n')
    expect(isFieldValue('private, max-age=60\t')).toBe(true)
  })

  it("agrees with Node's own checks (validateHeaderName, validateHeaderValue) on every character", () => {
    const takes = (check: () => void) => {
      try {
        check()
        return true
      } catch {
        return false
      }
    }
    for (let code = 0; code < 0x180; code++) {
      const value = `a${String.fromCharCode(code)}b`
      expect([code, isFieldValue(value)]).toEqual([code, takes(() => validateHeaderValue('x', value))])
      expect([code, renderHeaderLines([value, 'v']) !== null]).toEqual([code, takes(() => validateHeaderName(value))])
    }
  })
})
