import { connect } from 'node:net'
import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'
import { call, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// Contract, "Logs": a line is one line to every reader. A caller's text reaches the access
// line (its user-agent, the account its body names) with characters JSON leaves raw in a
// string: C1 controls (U+0080 to U+009F: NEL, a line break to Unicode's line splitters;
// CSI, an escape sequence's start to a terminal that honours C1) and U+2028, U+2029 (line
// and paragraph separators). Each is written escaped (`\u0085`): the value read back is the
// caller's, and no reader splits the line or runs the caller's escape sequence.

const sg = useAttackGateway()

/** Characters a line may not hold raw: C1 controls, U+2028 and U+2029. */
const RAW = /[\u0080-\u009f\u2028\u2029]/

/** The access lines written after `before` lines whose text holds `marker`, once one is written. */
async function accessLines(before: number, marker: string): Promise<string[]> {
  const lines = () => sg.gw.logs.lines.slice(before).filter((l) => l.includes('"msg":"request"') && l.includes(marker))
  await waitFor('the access line', () => lines().length > 0)
  return lines()
}

/** Sends `head` (latin1 bytes: a header's obs-text as a caller's bytes) on a connection of its own; resolves with the status line. */
function rawRequest(head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(sg.port, '127.0.0.1', () => socket.end(Buffer.from(head, 'latin1')))
    let received = ''
    socket.setEncoding('latin1').on('data', (chunk: string) => (received += chunk))
    socket.on('close', () => resolve(received.split('\r\n')[0] ?? ''))
    socket.on('error', reject)
  })
}

describe('a caller\'s text holding characters that break a line or start an escape sequence', () => {
  it('in its user-agent, with no key at all: the access line holds them escaped, the value read back as sent', async () => {
    const agent = 'probe-c1 \x85{"level":30,"msg":"forged"} \x9b2J\x9bH'
    const before = sg.gw.logs.lines.length
    const status = await rawRequest(`GET /api/v1/report/campaigns/get HTTP/1.1\r\nhost: gw\r\nuser-agent: ${agent}\r\nconnection: close\r\n\r\n`)
    expect(status).toBe('HTTP/1.1 401 Unauthorized')
    const [line] = await accessLines(before, 'probe-c1')
    expect(line).not.toMatch(RAW)
    expect(line).toContain('\\u0085')
    expect((JSON.parse(line as string) as { userAgent: string }).userAgent).toBe(agent)
  })

  it('in the account its body names: the access line holds them escaped, the account read back as sent', async () => {
    const account = 'probe-sep \u2028{"msg":"forged"}\u2029 \u0085 \u009b31m'
    const before = sg.gw.logs.lines.length
    expect((await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, json: { userId: account } })).status).toBe(403)
    const [line] = await accessLines(before, 'probe-sep')
    expect(line).not.toMatch(RAW)
    expect((JSON.parse(line as string) as { advertiser: string }).advertiser).toBe(account)
  })
})

itLoggedNoSecret(sg)
