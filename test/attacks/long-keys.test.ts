import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { call, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// A JSON key is of any length up to the body's limit (64 KiB), and the scope rules read
// the names each key holds for PHP (its variable, each bracketed key below it: scope.ts
// keyNames). A key of 60,000 `[` with no `]` behind them, read by a pattern tried at each
// `[`, held one replica's event loop 12 s for one call (5 s for `[x` repeated), every other
// team's calls on that replica waiting: a team could keep a replica from answering with
// one such call every 12 s. Each of these calls is answered as an ordinary call is, with
// well under a second of CPU time. The bound is on the CPU time this process (the gateway
// and the sandbox in it) spends over the call: a loaded machine makes the call wait for a
// core, which the clock on the wall counts and the CPU time does not.

const sg = useAttackGateway()
const BOUND_MS = 2000

/** A call's status and the CPU time (ms) the process spent while it was under way. */
async function timed(key: string, body: Record<string, unknown>): Promise<{ status: number; ms: number }> {
  const started = process.cpuUsage()
  const res = await call(sg, 'POST', '/api/v1/campaign/get', { key, json: body })
  const spent = process.cpuUsage(started)
  return { status: res.status, ms: (spent.user + spent.system) / 1000 }
}

describe('a JSON key of tens of thousands of brackets', () => {
  it.each([
    ['`[` alone', `a${'['.repeat(60_000)}`],
    ['`[x` repeated', `a${'[x'.repeat(30_000)}`],
    ['`[]` repeated', `a${'[]'.repeat(30_000)}`],
    ['`][` repeated', `a${']['.repeat(30_000)}`],
  ])('%s: answered at once, for a scoped team and a team of every account', async (_name, long) => {
    for (const key of [KEYS.writer, KEYS.all]) {
      const { status, ms } = await timed(key, { userId: 101, [long]: 1 })
      expect(status).toBe(200)
      expect(ms).toBeLessThan(BOUND_MS)
    }
  })
})

itLoggedNoSecret(sg)
