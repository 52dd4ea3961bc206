import type { Sandbox } from '../../src/sandbox/sandbox.js'

/** The sandbox's next answer, written raw: the status line, `head` lines, then `body` as bytes, with its length. */
export function answerOnce(sandbox: Sandbox, status: string, head: string[], body: Buffer): void {
  const lines = [...head, `content-length: ${body.length}`].join('\r\n')
  sandbox.setFailure({ kind: 'raw', answer: `HTTP/1.1 ${status}\r\n${lines}\r\n\r\n${body.toString('latin1')}`, times: 1 })
}
