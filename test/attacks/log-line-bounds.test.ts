import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'
import { call, useAttackGateway } from './attack-gateway.js'

// Contract, "Logs": the access line's `advertiser` is the account the call named, as the
// caller wrote it. A caller chooses how many accounts a body names and how long each is:
// the line holds at most 50 of them, each written in 64 characters at most, and counts the
// rest, so that no caller makes a line a log driver splits (Docker's json-file at 16 KiB),
// whose request no parser then reads, nor a line as long as its body.

const sg = useAttackGateway()
const LINE_MAX = 16 * 1024

/** The access line of the next request the gateway answers after `before` lines, once written. */
async function nextAccessLine(before: number): Promise<{ line: string; fields: Record<string, unknown> }> {
  const lines = () => sg.gw.logs.lines.slice(before).filter((l) => l.includes('"msg":"request"'))
  await waitFor('the access line', () => lines().length > 0)
  const line = lines()[0] as string
  return { line, fields: JSON.parse(line) as Record<string, unknown> }
}

describe("a body naming accounts past the access line's room", () => {
  it('of 5,000 accounts: the line names the first 50 and counts the rest', async () => {
    const before = sg.gw.logs.lines.length
    const ids = Array.from({ length: 5000 }, (_, i) => i + 1)
    expect((await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, json: { userId: ids } })).status).toBe(403)
    const { line, fields } = await nextAccessLine(before)
    expect(line.length).toBeLessThan(LINE_MAX)
    expect(fields).toMatchObject({ status: 403, advertiser: ids.slice(0, 50), advertisersLeftOut: 4950 })
  })

  it('of one account 100,000 characters long, or an object: each is written in 64 characters and how many were left out', async () => {
    const long = 'x'.repeat(100_000)
    const object = { a: 'y'.repeat(1000) }
    for (const [userId, written] of [
      [long, `${'x'.repeat(64)}… (+${100_000 - 64} characters)`],
      [[object, 101], [`${JSON.stringify(object).slice(0, 64)}… (+${JSON.stringify(object).length - 64} characters)`, 101]],
    ] as const) {
      const before = sg.gw.logs.lines.length
      expect((await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, json: { userId } })).status).toBe(403)
      const { line, fields } = await nextAccessLine(before)
      expect(line.length).toBeLessThan(LINE_MAX)
      expect(fields.advertiser).toEqual(written)
      expect(fields).not.toHaveProperty('advertisersLeftOut')
    }
  })

  it('of a few short accounts: the line names them as the caller wrote them', async () => {
    const before = sg.gw.logs.lines.length
    expect((await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, json: { userId: [101, '201', { a: 1 }] } })).status).toBe(403)
    const { fields } = await nextAccessLine(before)
    expect(fields.advertiser).toEqual([101, 201, { a: 1 }])
    expect(fields).not.toHaveProperty('advertisersLeftOut')
  })
})
