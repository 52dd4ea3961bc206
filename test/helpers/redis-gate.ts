import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net'

/**
 * A TCP way to the Redis on `port` that refuses connections until opened: a Redis out of a
 * replica's reach at its start, in reach once `open` is called. Two partitions, each until the
 * next `open`: `cut` drops every connection through it and refuses new ones (the replica hears
 * of it at once); `stall` carries no byte either way on any connection, old or new, without
 * closing one (packets dropped: the replica hears nothing), and `open` then carries what was
 * held, as TCP retransmits it once the network heals. Closed by `cleanups`.
 */
export async function redisGate(
  port: number,
  cleanups: (() => void | Promise<void>)[],
): Promise<{ url: string; open(): void; cut(): void; stall(): void }> {
  let state: 'closed' | 'open' | 'stalled' = 'closed'
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => undefined)
    if (state === 'closed') return socket.destroy()
    const upstream = connect(port, '127.0.0.1')
    sockets.add(upstream)
    upstream.on('error', () => socket.destroy())
    socket.pipe(upstream).pipe(socket)
    if (state === 'stalled') for (const s of [socket, upstream]) s.pause()
  })
  const url = await listenClosedBy(server, sockets, cleanups)
  return {
    url,
    open: () => {
      if (state === 'stalled') for (const socket of sockets) socket.resume()
      state = 'open'
    },
    cut: () => {
      state = 'closed'
      for (const socket of sockets) socket.destroy()
      sockets.clear()
    },
    stall: () => {
      state = 'stalled'
      for (const socket of sockets) socket.pause()
    },
  }
}

/**
 * A TCP way to the Redis on `port` that holds, on the connection that sends it, the first
 * command naming `word` (a SUBSCRIBE of one channel, say) and every byte that connection
 * sends after it, until `release`: the caller waits for that answer as long as the test
 * wants, every other connection carrying on. Closed by `cleanups`.
 */
export async function commandGate(
  port: number,
  word: string,
  cleanups: (() => void | Promise<void>)[],
): Promise<{ url: string; holding(): boolean; release(): void }> {
  const sockets = new Set<Socket>()
  let holding: { upstream: Socket; chunks: Buffer[] } | null = null
  let released = false
  const server = createServer((socket) => {
    const upstream = connect(port, '127.0.0.1')
    for (const s of [socket, upstream]) {
      sockets.add(s)
      s.on('error', () => (s === socket ? upstream : socket).destroy())
    }
    upstream.pipe(socket)
    socket.on('data', (chunk: Buffer) => {
      if (holding?.upstream === upstream) return void holding.chunks.push(chunk)
      if (!released && !holding && chunk.includes(word)) holding = { upstream, chunks: [chunk] }
      else upstream.write(chunk)
    })
    socket.on('end', () => upstream.end())
  })
  const url = await listenClosedBy(server, sockets, cleanups)
  return {
    url,
    holding: () => holding !== null,
    release: () => {
      released = true
      const held = holding
      holding = null
      for (const chunk of held?.chunks ?? []) held?.upstream.write(chunk)
    },
  }
}

/** Listens on a loopback port; `cleanups` then destroys `sockets` and closes the server. Its redis:// URL. */
async function listenClosedBy(server: Server, sockets: Set<Socket>, cleanups: (() => void | Promise<void>)[]): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  cleanups.push(() => {
    for (const socket of sockets) socket.destroy()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return `redis://127.0.0.1:${(server.address() as AddressInfo).port}`
}
