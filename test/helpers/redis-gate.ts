import { connect, createServer, type AddressInfo, type Socket } from 'node:net'

/**
 * A TCP way to the Redis on `port` that refuses connections until opened: a Redis out of a
 * replica's reach at its start, in reach once `open` is called. Closed by `cleanups`.
 */
export async function redisGate(port: number, cleanups: (() => void | Promise<void>)[]): Promise<{ url: string; open(): void }> {
  let opened = false
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => undefined)
    if (!opened) return socket.destroy()
    const upstream = connect(port, '127.0.0.1')
    sockets.add(upstream)
    upstream.on('error', () => socket.destroy())
    socket.pipe(upstream).pipe(socket)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  cleanups.push(() => {
    for (const socket of sockets) socket.destroy()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return { url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`, open: () => (opened = true) }
}
