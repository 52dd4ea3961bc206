// The slow callers of test/slow/answer-memory.test.ts, in a worker thread of their own: each
// sips its answer every 100 ms whatever the test's own thread is doing (it runs the
// sandbox, which makes 50 MB answers). Each caller's HTTP status and bytes read are
// written to the shared arrays of `workerData`; a refusal's GW_* code is posted once.
import { connect } from 'node:net'
import { clearInterval, setInterval } from 'node:timers'
import { parentPort, workerData } from 'node:worker_threads'

const { status, got, key, bytesPerSecond } = workerData

parentPort.on('message', ({ id, port, path }) => {
  const socket = connect(port, '127.0.0.1')
  socket.pause()
  socket.on('error', () => undefined)
  socket.write(`GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${key}\r\n\r\n`)
  let head = ''
  let coded = false
  const sip = setInterval(() => {
    let taken = 0
    for (let chunk = socket.read(); chunk !== null; chunk = taken < bytesPerSecond / 10 ? socket.read() : null) {
      if (head.length < 1024) head += chunk.subarray(0, 1024).toString('latin1')
      taken += chunk.length
    }
    got[id] += taken
    if (status[id] === 0 && head.length >= 12) status[id] = Number(head.slice(9, 12))
    const code = coded ? undefined : /"code":"(GW_[A-Z_]+)"/.exec(head)?.[1]
    if (code !== undefined) {
      coded = true
      parentPort.postMessage({ id, code })
    }
  }, 100)
  socket.once('close', () => clearInterval(sip))
})
