import { readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { createServer, type Server } from 'node:tls'
import type { PrivateCa } from './private-ca.js'

/** A TLS listener on 127.0.0.1 in front of a plain HTTP server, as a platform behind https is: each connection's bytes passed both ways. */
export interface TlsFront {
  /** `https://localhost:<port>`, the name the certificate holds. */
  url: string
  close(): Promise<void>
}

/** Starts a TLS front for `target` (an http:// URL on 127.0.0.1) with `files`' certificate. */
export async function startTlsFront(target: string, files: PrivateCa): Promise<TlsFront> {
  const port = Number(new URL(target).port)
  const open = new Set<{ destroy(): void }>()
  const server: Server = createServer({ key: readFileSync(files.key), cert: readFileSync(files.cert) }, (outside) => {
    const inside = connect(port, '127.0.0.1')
    open.add(outside)
    outside.pipe(inside).pipe(outside)
    outside.on('error', () => inside.destroy())
    inside.on('error', () => outside.destroy())
    outside.on('close', () => {
      open.delete(outside)
      inside.destroy()
    })
    inside.on('close', () => outside.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port: own } = server.address() as { port: number }
  return {
    url: `https://localhost:${own}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        // Connections the gateway keeps alive end with the front.
        for (const socket of open) socket.destroy()
      }),
  }
}
