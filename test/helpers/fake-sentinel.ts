import { createServer, type Server, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'

const bulk = (s: string) => `$${Buffer.byteLength(s)}\r\n${s}\r\n`

/**
 * The RESP commands complete at the start of `buffered` (arrays of bulk strings, as every
 * client sends them), and how many bytes they take: a command split across chunks waits
 * for its rest.
 */
export function completeCommands(buffered: Buffer): { commands: string[][]; used: number } {
  const commands: string[][] = []
  let at = 0
  for (;;) {
    const command: string[] = []
    let i = at
    const line = () => {
      const end = buffered.indexOf('\r\n', i)
      if (end < 0) return null
      const text = buffered.toString('utf8', i, end)
      i = end + 2
      return text
    }
    const head = line()
    if (head === null || !head.startsWith('*')) return { commands, used: at }
    const count = Number(head.slice(1))
    for (let n = 0; n < count; n++) {
      const size = line()
      if (size === null || !size.startsWith('$')) return { commands, used: at }
      const length = Number(size.slice(1))
      if (buffered.length < i + length + 2) return { commands, used: at }
      command.push(buffered.toString('utf8', i, i + length))
      i += length + 2
    }
    commands.push(command)
    at = i
  }
}

/**
 * A Sentinel that names `master()` as the master of any name, and answers every other
 * command with an empty list: one answer per command, however the client's writes are
 * cut into chunks (a client sends its CLIENT SETINFO pair and its first query in one
 * write or in several, as its event loop goes).
 */
export async function fakeSentinel(master: () => { host: string; port: number }): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => undefined)
    let buffered = Buffer.alloc(0)
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk])
      const { commands, used } = completeCommands(buffered)
      buffered = buffered.subarray(used)
      for (const command of commands) {
        const asksMaster = command[0]?.toLowerCase() === 'sentinel' && command[1]?.toLowerCase() === 'get-master-addr-by-name'
        const { host, port } = master()
        socket.write(asksMaster ? `*2\r\n${bulk(host)}${bulk(String(port))}` : '*0\r\n')
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      for (const socket of sockets) socket.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
