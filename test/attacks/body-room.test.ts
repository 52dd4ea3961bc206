import { connect, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { KEYS, SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { call, useAttackGateway } from './attack-gateway.js'
import { scanJson } from '../../src/access/request-body.js'

// A caller's body is read whole before anything of it is sent (admission.ts), so the bytes
// of every body under way sit in the gateway's memory. A black-box pass (session 133) held
// 600 connections of one read-only key, each 1 byte short of a 1 MiB body: the replica went
// from 148 to 807 MB resident, past the chart's 512 MiB limit. Bodies are now held within
// platform.bufferTotalBytes, one team's to a quarter of it (body-room.ts).

const BUDGET = 4 * 1024 * 1024
const sg = useAttackGateway({ yaml: `platform:\n  bufferTotalBytes: ${BUDGET}\n${SANDBOX_TEAMS_YAML}` })
const LIST = '/api/v1/campaign/get'
const JSON_TYPE = { 'content-type': 'application/json' }
const sockets: Socket[] = []

afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy()
})

/** A connection of `key`'s team sending a body of `length` bytes all but its last byte; resolves with what it was answered, if it is. */
function heldBody(key: string, length: number): { answer: Promise<string> } {
  const socket = connect(sg.port, '127.0.0.1')
  sockets.push(socket)
  const body = `{"userId":101,"x":"${'A'.repeat(length - 21)}"}`
  let text = ''
  const answer = new Promise<string>((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1')
      if (text.includes('\r\n\r\n')) resolve(text)
    })
    socket.on('error', () => resolve(text))
    socket.on('close', () => resolve(text))
  })
  socket.on('connect', () => socket.write(`POST ${LIST} HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${key}\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n${body.slice(0, -1)}`))
  return { answer }
}

describe('request bodies under way are held within the answers\' budget', () => {
  it('refuses a team\'s body past its quarter of platform.bufferTotalBytes 503 GW_BODY_BUDGET with retry-after, while another team\'s body goes through', async () => {
    const held = Array.from({ length: 6 }, () => heldBody(KEYS.growth, 600 * 1024))
    // One body fits the team's quarter (1 MiB) and waits for its last byte; the others cannot.
    const answers: string[] = []
    await new Promise<void>((resolve) => {
      for (const h of held) void h.answer.then((text) => answers.push(text) === 5 && resolve())
    })
    for (const text of answers) {
      expect(text).toMatch(/^HTTP\/1\.1 503 /)
      expect(text).toMatch(/\r\nretry-after: \d+\r\n/i)
      expect(text).toContain('GW_BODY_BUDGET')
    }
    const other = await call(sg, 'POST', LIST, { key: KEYS.writer, body: '{"userId":101}', headers: JSON_TYPE })
    expect(other.status).toBe(200)
  }, 30_000)

  it('gives a body\'s room back once its call ends: the team that was refused sends again', async () => {
    // Two bodies of 900 KiB in the team's 1 MiB: whichever comes second past the quarter is refused.
    const bodies = [heldBody(KEYS.growth, 900 * 1024), heldBody(KEYS.growth, 900 * 1024)]
    expect(await Promise.race(bodies.map((b) => b.answer))).toMatch(/^HTTP\/1\.1 503 /)
    for (const socket of sockets.splice(0)) socket.destroy()
    await Promise.all(bodies.map((b) => b.answer))
    // The gateway hears the close, and gives the room back, as it reads the socket's end: asked until then.
    let status = 0
    for (let i = 0; i < 200 && status !== 200; i++) {
      const res = await call(sg, 'POST', LIST, { key: KEYS.growth, body: `{"userId":101,"x":"${'B'.repeat(100 * 1024)}"}`, headers: JSON_TYPE })
      status = res.status
      if (status !== 200) {
        expect(res.json).toMatchObject({ code: 'GW_BODY_BUDGET' })
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
    }
    expect(status).toBe(200)
  }, 30_000)

  it('refuses a body that alone counts past its team\'s quarter 400 GW_BAD_REQUEST, with no retry-after: no wait makes room for it', async () => {
    // 140,000 empty objects in 420 KB, within bodyLimit: parsed, each counts 128 bytes, about
    // 18 MiB against the team's 1 MiB. Sent alone to an idle gateway, it was 503
    // GW_BODY_BUDGET with retry-after: 1, answered so to every retry (black-box pass).
    const body = `{"userId":101,"x":[${Array.from({ length: 140_000 }, () => '{}').join(',')}]}`
    for (let i = 0; i < 2; i++) {
      const res = await post(KEYS.growth, body)
      expect(res.status).toBe(400)
      expect(res.json).toMatchObject({ code: 'GW_BAD_REQUEST' })
      expect(res.json.message).toMatch(/^body: .*a quarter of platform\.bufferTotalBytes/)
      expect(res.retryAfter).toBeNull()
    }
    // A body within the quarter goes through as before.
    expect((await post(KEYS.growth, '{"userId":101,"x":[{},{}]}')).status).toBe(200)
  }, 30_000)

  it('refuses a JSON body whose values alone count past its team\'s quarter before it is parsed: the count it says is its bytes and its values\', at least', async () => {
    // 170,000 arrays nested 3 deep in 1 MiB: a parse of about 100 ms of CPU, then refused
    // (an attacker's cheapest way to hold a core). The scan before the parse counts them.
    const body = `{"userId":101,"x":[${Array.from({ length: 170_000 }, () => '[[]]').join(',')}]}`
    const scan = scanJson(Buffer.from(body))
    const counted = body.length + 32 * (scan.values - scan.containers) + 128 * scan.containers
    const res = await post(KEYS.growth, body)
    expect(res.status).toBe(400)
    expect(res.json).toMatchObject({ code: 'GW_BAD_REQUEST' })
    expect(res.json.message).toMatch(new RegExp(`^body: counts at least ${counted} bytes as read and parsed .*a quarter of platform\\.bufferTotalBytes`))
    expect(res.retryAfter).toBeNull()
    expect(sg.callerRequests()).toEqual([])
  }, 30_000)

  it('refuses a body within bodyLimit whose bytes and parsed text pass its team\'s quarter 400 GW_BAD_REQUEST, with no retry-after', async () => {
    // Within bodyLimit (1 MiB), but its bytes and its parsed text (the text sent on) together
    // pass the team's quarter of this gateway's 4 MiB budget.
    const res = await post(KEYS.growth, `{"userId":101,"x":"${'C'.repeat(900 * 1024)}"}`)
    expect(res.status).toBe(400)
    expect(res.json).toMatchObject({ code: 'GW_BAD_REQUEST' })
    expect(res.retryAfter).toBeNull()
  }, 30_000)
})

async function post(key: string, body: string): Promise<{ status: number; json: { code?: string; message: string }; retryAfter: string | null }> {
  const res = await fetch(`${sg.url}${LIST}`, { method: 'POST', headers: { 'x-api-key': key, ...JSON_TYPE }, body })
  return { status: res.status, json: (await res.json()) as { code?: string; message: string }, retryAfter: res.headers.get('retry-after') }
}
