import { Readable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { Admission, BODY_TURN_BYTES, type CallEnd } from '../../src/access/admission.js'
import { KnownUrls } from '../../src/access/known-urls.js'
import { TeamDirectory } from '../../src/access/team-auth.js'
import { ByteBudget } from '../../src/platform/client/answer-budget.js'
import { KEYS, TEAMS_YAML, testConfig } from '../helpers/build-gateway.js'
import { admissionParts } from '../helpers/admission-parts.js'
import { SecretSet } from '../../src/observe/logger.js'

// A body's read in Admission (access/admission.ts): its bytes held in the answers' budget
// until its call ends (body-room.ts), and a large one parsed in a turn of its team's, as a
// report call's work is (reports/call-turns.ts).

function setUp(budgetBytes = 1 << 24) {
  const config = testConfig({ PLATFORM_BASE_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN: 'platform-token-for-tests' }, TEAMS_YAML)
  const teams = new TeamDirectory(config.teams, () => Date.now())
  const turns: { team: string; go: () => void }[] = []
  const budget = new ByteBudget(budgetBytes)
  const admission = new Admission(
    admissionParts(config, teams, { answers: { budget }, reports: { turn: (team) => new Promise((resolve) => turns.push({ team, go: () => resolve(true) })) } }),
    new KnownUrls({ teams: () => 1, configured: () => true }),
  )
  return { admission, turns, budget }
}

/** A call's end, closed when the test says. */
function callEnd(): CallEnd & { close(): void } {
  const listeners: (() => void)[] = []
  const end = { closed: false, once: (_e: 'close', fn: () => void) => listeners.push(fn), close: () => { end.closed = true; for (const fn of listeners) fn() } }
  return end
}

function post(admission: Admission, body: string, end: CallEnd) {
  const headers = { 'x-api-key': KEYS.writer, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }
  const call = { method: 'POST', url: '/api/v1/campaign/get', headers, caller: null }
  const caller = admission.admit(call)
  return { caller, read: admission.readBody({ method: 'POST', headers, body: Readable.from([Buffer.from(body)]) }, caller, 1 << 20, end) }
}

describe('a body read by Admission', () => {
  it('parses a body past BODY_TURN_BYTES only in a turn of its team\'s, a smaller one at once', async () => {
    const { admission, turns } = setUp()
    const small = post(admission, '{"userId":101}', callEnd())
    await small.read
    expect(turns).toEqual([])
    expect(small.caller.body?.text).toBe('{"userId":101}')
    const large = post(admission, `{"userId":101,"x":"${'a'.repeat(BODY_TURN_BYTES)}"}`, callEnd())
    await new Promise((resolve) => setImmediate(resolve))
    expect(turns.map((t) => t.team)).toEqual(['writer'])
    expect(large.caller.body).toBeNull()
    turns[0]!.go()
    await large.read
    expect(large.caller.body?.kind).toBe('json')
  })

  it('holds a body\'s bytes and its parsed form in the budget until its call ends', async () => {
    const { admission, budget } = setUp()
    const end = callEnd()
    const call = post(admission, '{"userId":101,"x":[1,2,3]}', end)
    await call.read
    const text = call.caller.body!.text
    expect(budget.used).toBe(Buffer.byteLength(text) + text.length + 32 * 6 + 128 * 2)
    end.close()
    expect(budget.used).toBe(0)
  })

  it('refuses a body that fits its team\'s quarter alone but not beside the team\'s bodies under way 503 GW_BODY_BUDGET with retry-after, holding no more than the quarter until its call ends', async () => {
    const { admission, budget } = setUp(64 * 1024)
    const first = callEnd()
    await post(admission, `{"userId":101,"x":"${'a'.repeat(5 * 1024)}"}`, first).read
    const end = callEnd()
    const refused = post(admission, `{"userId":101,"x":"${'a'.repeat(5 * 1024)}"}`, end)
    await expect(refused.read).rejects.toMatchObject({ code: 'GW_BODY_BUDGET', statusCode: 503, retryAfterSec: expect.any(Number) })
    expect(budget.used).toBeLessThanOrEqual(16 * 1024)
    end.close()
    first.close()
    expect(budget.used).toBe(0)
  })

  it('refuses a body that alone counts past its team\'s quarter 400 GW_BAD_REQUEST without retry-after: no wait makes room for it', async () => {
    const { admission, budget } = setUp(64 * 1024)
    const end = callEnd()
    const refused = post(admission, `{"userId":101,"x":"${'a'.repeat(20 * 1024)}"}`, end)
    await expect(refused.read).rejects.toMatchObject({ code: 'GW_BAD_REQUEST', statusCode: 400, message: expect.stringMatching(/a quarter of platform\.bufferTotalBytes \(16384 bytes\)/) })
    await expect(refused.read).rejects.not.toHaveProperty('retryAfterSec')
    expect(budget.used).toBeLessThanOrEqual(16 * 1024)
    end.close()
    expect(budget.used).toBe(0)
  })

  // The text sent on is searched for the gateway's secrets unless it is the caller's bytes
  // searched before the parse with the same secrets: a secret added while the body waited
  // for its turn (a platform token obtained meanwhile) is found in it all the same.
  it('finds in the text sent on a secret added while the body waited for its turn, the text the bytes searched before it', async () => {
    const config = testConfig({ PLATFORM_BASE_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN: 'platform-token-for-tests' }, TEAMS_YAML)
    const teams = new TeamDirectory(config.teams, () => Date.now())
    const secrets = new SecretSet()
    const added = 'platform-token-obtained-meanwhile-0123'
    const admission = new Admission(
      admissionParts(config, teams, { secrets, reports: { turn: () => { secrets.add(added); return Promise.resolve(true) } } }),
      new KnownUrls({ teams: () => 1, configured: () => true }),
    )
    // ASCII JSON as JSON.stringify writes it, holding a `%`: the text sent on is its bytes.
    const body = `{"userId":101,"pad":"${'%41'.repeat(BODY_TURN_BYTES / 3)}","note":"${added}"}`
    expect(JSON.stringify(JSON.parse(body))).toBe(body)
    await expect(post(admission, body, callEnd()).read).rejects.toMatchObject({ code: 'GW_BAD_REQUEST', message: expect.stringContaining("body: holds a secret of the gateway's") })
  })
})
