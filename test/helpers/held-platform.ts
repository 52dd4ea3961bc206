import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { REPORT_PATH } from './build-gateway.js'

/**
 * A platform stand-in on a loopback port whose report answers wait while `held`, each
 * saying which call it answers (`impressions` of its one row: 1, 2, …); any other path is 404.
 */
export async function heldPlatform() {
  let calls = 0
  const waiting: (() => void)[] = []
  let held = false
  const server: Server = createServer((req, res) => {
    req.resume()
    const answer = () => {
      calls += 1
      const body = JSON.stringify({ data: [{ date: '2025-03-01', impressions: calls }] })
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body)
    }
    if (!req.url?.startsWith(REPORT_PATH)) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"Not Found"}')
    if (held) waiting.push(answer)
    else answer()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hold: () => (held = true),
    waiting: () => waiting.length,
    release: () => {
      held = false
      for (const answer of waiting.splice(0)) answer()
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
