import { once } from 'node:events'
import { createServer, connect, type AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { Admission, BODY_TURN_BYTES, type CallEnd } from '../../src/access/admission.js'
import { KnownUrls } from '../../src/access/known-urls.js'
import { TeamDirectory } from '../../src/access/team-auth.js'
import { ByteBudget } from '../../src/platform/client/answer-budget.js'
import { KEYS, TEAMS_YAML, testConfig } from '../helpers/build-gateway.js'
import { admissionParts } from '../helpers/admission-parts.js'
import { SecretSet } from '../../src/observe/logger.js'
import { CallTurns } from '../../src/reports/call-turns.js'

// A body's read in Admission (access/admission.ts): its bytes held in the answers' budget
// until its call ends (body-room.ts), and a large one parsed in a turn of its team's, as a
// report call's work is (reports/call-turns.ts).

function setUp(budgetBytes = 1 << 24) {
  const config = testConfig({ PLATFORM_BASE_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN: 'platform-token-for-tests' }, TEAMS_YAML)
  const teams = new TeamDirectory(config.teams, () => Date.now())
  const turns: { team: string; go: () => void }[] = []
  const budget = new ByteBudget(budgetBytes)
  const admission = new Admission(
    admissionParts(config, teams, { answers: { budget }, reports: {
        turn: (team, gone) =>
          new Promise((resolve) => {
            turns.push({ team, go: () => resolve(true) })
            gone?.addEventListener('abort', () => resolve(false), { once: true })
          }),
      },
    }),
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

/** Grants each turn `read` asks as it asks it, until it ends: how many it took. */
async function grantTurns(turns: { go: () => void }[], read: Promise<void>): Promise<number> {
  let done = false
  void read.then(() => (done = true))
  let granted = 0
  for (;;) {
    while (!done && turns.length === granted) await new Promise((resolve) => setImmediate(resolve))
    if (done) break
    turns[granted++]!.go()
  }
  await read
  return granted
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
    await grantTurns(turns, large.read)
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

  // A large body's work is cut in pieces, each in a turn of its team's (reports/call-turns.ts):
  // the search of its text for the gateway's secrets is the largest part of it (a rolling hash
  // a length of secret over the whole text), and another team's read waits behind one piece
  // of it at most, not behind the body's whole check.
  it('searches a body past BODY_TURN_BYTES for the gateway\'s secrets in pieces of BODY_TURN_BYTES characters, a turn of its team\'s each', async () => {
    const { admission, turns } = setUp()
    const body = `{"userId":101,"x":"${'a'.repeat((1 << 20) - 64)}"}`
    const large = post(admission, body, callEnd())
    const granted = await grantTurns(turns, large.read)
    expect(turns.every((t) => t.team === 'writer')).toBe(true)
    // The parse's four turns (its scan, JSON.parse, its walk, the text written), then one a piece of the text's search.
    expect(granted).toBeGreaterThanOrEqual(4 + Math.ceil(body.length / BODY_TURN_BYTES))
  })

  // A caller that hangs up while its large body is checked leaves nobody to answer: the pieces
  // left are not run, and the turn the check waits for is given up to the other teams.
  it('runs no piece of a large body\'s check once its caller hangs up: the read fails 499 and asks no turn more', async () => {
    const { admission, turns } = setUp()
    const end = callEnd()
    const large = post(admission, `{"userId":101,"x":"${'a'.repeat((1 << 20) - 64)}"}`, end)
    const failed = large.read.then(() => null, (err: unknown) => err)
    let settled = false
    void failed.then(() => (settled = true))
    const next = async (n: number) => {
      while (!settled && turns.length < n) await new Promise((resolve) => setImmediate(resolve))
    }
    for (let n = 1; n <= 3; n++) {
      await next(n)
      turns[n - 1]!.go()
    }
    await next(4)
    end.close()
    // Every turn asked from here on is granted at once: a check that went on would run to its end.
    for (let granted = 3; !settled; ) {
      await next(granted + 1)
      if (turns.length > granted) turns[granted++]!.go()
    }
    expect(await failed).toMatchObject({ code: 'CALLERS_GONE', statusCode: 499 })
    expect(turns).toHaveLength(4)
  })

  it('finds a secret across the edge of two pieces of a large body\'s search, and refuses the body', async () => {
    const config = testConfig({ PLATFORM_BASE_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN: 'platform-token-for-tests' }, TEAMS_YAML)
    const teams = new TeamDirectory(config.teams, () => Date.now())
    const secret = 'platform-password-across-an-edge'
    const head = '{"userId":101,"x":"'
    for (const start of [3 * BODY_TURN_BYTES - 5, 15 * BODY_TURN_BYTES - secret.length + 7]) {
      // Each body its own gateway's: the first refusal suspends the team.
      const secrets = new SecretSet()
      secrets.add(secret)
      const admission = new Admission(admissionParts(config, teams, { secrets, answers: { budget: new ByteBudget(1 << 24) }, reports: { turn: () => Promise.resolve(true) } }), new KnownUrls({ teams: () => 1, configured: () => true }))
      const body = `${head}${'a'.repeat(start - head.length)}${secret}"}`
      await expect(post(admission, body, callEnd()).read).rejects.toMatchObject({ code: 'GW_BAD_REQUEST', message: expect.stringContaining("body: holds a secret of the gateway's") })
    }
  })

  it('reads another connection\'s bytes, in the loop\'s next poll, before a large body\'s check that began ends', async () => {
    const config = testConfig({ PLATFORM_BASE_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN: 'platform-token-for-tests' }, TEAMS_YAML)
    const teams = new TeamDirectory(config.teams, () => Date.now())
    const secrets = new SecretSet()
    secrets.add('platform-token-of-the-gateway-0123456789')
    const server = createServer()
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const client = connect((server.address() as AddressInfo).port, '127.0.0.1')
    const [peer] = (await once(server, 'connection')) as [import('node:net').Socket]
    const order: string[] = []
    peer.on('data', () => order.push('another caller'))
    const calls = new CallTurns()
    let first = true
    const turn = (team: string) => {
      const turned = calls.turn(team)
      // Another caller's request arrives as the body's first piece of work begins.
      void turned.then(() => {
        if (first) client.write('GET /')
        first = false
      })
      return turned
    }
    const admission = new Admission(admissionParts(config, teams, { secrets, answers: { budget: new ByteBudget(1 << 24) }, reports: { turn } }), new KnownUrls({ teams: () => 1, configured: () => true }))
    try {
      await post(admission, `{"userId":101,"x":"${'a'.repeat((1 << 20) - 64)}"}`, callEnd()).read
      order.push('the body checked')
      expect(order).toEqual(['another caller', 'the body checked'])
    } finally {
      client.destroy()
      server.close()
    }
  })
})
