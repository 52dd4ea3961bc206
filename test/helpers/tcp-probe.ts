import { connect } from 'node:net'

/** Resolves with the error code of a fresh TCP connection to 127.0.0.1:`port` (ECONNREFUSED once nothing listens), or 'connected'. */
export function tryConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve('connected')
    })
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'))
  })
}
