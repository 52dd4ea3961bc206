import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { gzipSync } from 'node:zlib'

/** A request the reflecting platform received: its method, its target as sent, its headers. */
export interface ReflectedRequest {
  method: string
  url: string
  headers: IncomingHttpHeaders
}

/** A platform stand-in that hands every request back to its sender, on a loopback port. */
export interface ReflectingPlatform {
  /** http://127.0.0.1:<port> */
  url: string
  /** Every request it received, CONNECT included, in order. */
  requests: ReflectedRequest[]
  /** Whether the request headers also come back as response headers (default); false: in the body alone. */
  echoHeaders: boolean
  /** How the reflection is written: its body's JSON text and each header value go through it (default: as they are). */
  spell: (text: string) => string
  /** The body is written in chunks of this many bytes, each its own write (default: one write). */
  chunkBytes: number | null
  close(): Promise<void>
}

/**
 * The worst platform a gateway can sit in front of: it answers every request 200 with
 * the request reflected, as RFC 9110 asks of TRACE and as a debug page or an echo route
 * does for any method. The body is JSON with the method, the target and every request
 * header; every request header also comes back as a response header (`x-echo-<name>`,
 * and `authorization` under its own name) unless `echoHeaders` is switched off. The body is gzipped for a request that
 * accepts gzip, as a platform behind a compressing proxy sends it. A CONNECT is answered
 * the same way before its socket is closed.
 */
export async function startReflectingPlatform(): Promise<ReflectingPlatform> {
  const requests: ReflectedRequest[] = []
  const reflect = (method: string, url: string, headers: IncomingHttpHeaders): { head: Record<string, string>; body: Buffer } => {
    requests.push({ method, url, headers })
    const head: Record<string, string> = { 'content-type': 'application/json' }
    for (const [name, value] of Object.entries(platform.echoHeaders ? headers : {})) {
      const text = platform.spell(Array.isArray(value) ? value.join(', ') : String(value))
      head[`x-echo-${name}`] = text
      if (name === 'authorization') head.authorization = text
    }
    const json = Buffer.from(platform.spell(JSON.stringify({ method, url, headers })))
    if (!/\bgzip\b/.test(String(headers['accept-encoding'] ?? ''))) return { head: { ...head, 'content-length': String(json.length) }, body: json }
    const body = gzipSync(json)
    return { head: { ...head, 'content-encoding': 'gzip', 'content-length': String(body.length) }, body }
  }
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      const { head, body } = reflect(req.method ?? '', req.url ?? '', req.headers)
      res.writeHead(200, head)
      const size = platform.chunkBytes ?? body.length
      for (let at = 0; at < body.length; at += size) res.write(body.subarray(at, at + size))
      res.end()
    })
  })
  server.on('connect', (req, socket) => {
    const { head, body } = reflect(req.method ?? '', req.url ?? '', req.headers)
    const lines = Object.entries({ ...head, connection: 'close' }).map(([name, value]) => `${name}: ${value}\r\n`)
    socket.end(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\n${lines.join('')}\r\n`), body]))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const platform: ReflectingPlatform = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    echoHeaders: true,
    spell: (text) => text,
    chunkBytes: null,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
  return platform
}
