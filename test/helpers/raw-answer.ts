import type { Sandbox } from '../../src/sandbox/sandbox.js'

/** The sandbox's next answer, written raw: the status line, `head` lines, then `body` as bytes, with its length. */
export function answerOnce(sandbox: Sandbox, status: string, head: string[], body: Buffer): void {
  const lines = [...head, `content-length: ${body.length}`].join('\r\n')
  sandbox.setFailure({ kind: 'raw', answer: `HTTP/1.1 ${status}\r\n${lines}\r\n\r\n${body.toString('latin1')}`, times: 1 })
}

/** The sandbox's next answer in chunks under `transfer-encoding: <codings>` (the last of them chunked), `body` as one chunk, or two split at `splitAt`, the connection closed after. */
export function answerChunkedOnce(sandbox: Sandbox, status: string, head: string[], codings: string, body: Buffer, splitAt = body.length): void {
  const lines = [...head, `transfer-encoding: ${codings}`, 'connection: close'].join('\r\n')
  const chunks = [body.subarray(0, splitAt), body.subarray(splitAt)].filter((c) => c.length > 0)
  const framed = chunks.map((c) => `${c.length.toString(16)}\r\n${c.toString('latin1')}\r\n`).join('')
  sandbox.setFailure({ kind: 'raw', answer: `HTTP/1.1 ${status}\r\n${lines}\r\n\r\n${framed}0\r\n\r\n`, times: 1 })
}
