import { beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, teamsYamlWith, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'
import { onRealTimers } from '../helpers/clock.js'
import { answerOnce } from '../helpers/raw-answer.js'
import { waitFor } from '../helpers/wait.js'

// The platform's `retry-after` as a caller gets it: the pause the gateway drew for it, in
// whole seconds, never longer than platform.maxPause. A platform that says "in 3,000 years"
// (or a proxy before it that writes nonsense) would otherwise stop a well-behaved caller for
// good, while the gateway itself sends the call again after platform.maxPause.

const MAX_PAUSE_S = 2
const sandbox = useSandbox()
let token: string
beforeAll(() => {
  token = sandbox.issueToken()
})
// The gateway's clock runs with real time, and jumps to the end of the pauses under way
// where a case would wait them out (`passPauses`): the time a caller told to wait waits.
let skipped = 0
const clock = onRealTimers(() => Date.now() + skipped)
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: token }, teamsYamlWith({ platform: { maxPause: `${MAX_PAUSE_S}s` }, jobs: { retries: 0 } })), { deps: { clock } })

/** Moves the gateway's clock to the end of the last pause under way: none is left. */
function passPauses(): void {
  const pauses = gw.governors.pausesOf('default')
  if (pauses.length > 0) skipped += Math.max(0, Math.max(...pauses.map((p) => p.until)) - clock.now())
  expect(gw.governors.pausesOf('default')).toEqual([])
}

const CAMPAIGNS = '/api/v1/campaign/get'
const THROTTLED = Buffer.from('{"message":"Too Many Attempts."}')
const YEARS_AHEAD = new Date(Date.now() + 3000 * 365 * 86_400_000).toUTCString()
const DAY_AGO = new Date(Date.now() - 86_400_000).toUTCString()

const list = () => gw.proxy.inject({ method: 'POST', url: CAMPAIGNS, headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, payload: '{"userId":101}' })
let day = 0
/** The end of a report range no earlier case asked: one day later each time. */
const nextDay = () => new Date(Date.UTC(2025, 2, ++day)).toISOString().slice(0, 10)
/** A report no earlier case asked: a miss, one platform call. */
const report = () => gw.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=2025-03-01&dateTo=${nextDay()}`, headers: { 'x-api-key': KEYS.all } })

beforeEach(() => {
  // Each case starts with the 429's pause of the case before ended.
  passPauses()
})

describe("platform 429s without a retry-after in a row: the caller is told the pause each draws", () => {
  // First in the file: no 429 of another route within the escalation window, so each of
  // these pauses the team on the route, and one strike more each time.
  it('1 s, then doubled, at most platform.maxPause', async () => {
    // An answer that is not a 429 clears the strikes of every scope the call falls under.
    expect((await list()).statusCode).toBe(200)
    for (const told of ['1', '2', String(MAX_PAUSE_S)]) {
      passPauses()
      answerOnce(sandbox, '429 Too Many Requests', ['content-type: application/json'], THROTTLED)
      const res = await list()
      expect(res.statusCode).toBe(429)
      expect(res.headers['retry-after']).toBe(told)
      // The pause held is the one the caller was told of: it ends within its last second.
      await waitFor('the pause drawn', () => gw.governors.pausesOf('default').length === 1)
      const [pause] = gw.governors.pausesOf('default')
      expect((pause?.until ?? 0) - clock.now()).toBeGreaterThan((Number(told) - 1) * 1000)
    }
  })
})

// [the platform's retry-after lines, what the caller is told]
const CASES: [string, string[], string][] = [
  ['delay-seconds 3,000 years ahead', ['retry-after: 99999999999'], String(MAX_PAUSE_S)],
  ['more digits than a double holds', [`retry-after: ${'9'.repeat(400)}`], String(MAX_PAUSE_S)],
  ['an HTTP date 3,000 years ahead', [`retry-after: ${YEARS_AHEAD}`], String(MAX_PAUSE_S)],
  ['an HTTP date a day past', [`retry-after: ${DAY_AGO}`], '0'],
  ['negative', ['retry-after: -5'], '1'],
  ['fractional', ['retry-after: 1.5'], '1'],
  ['not a value at all', ['retry-after: abc'], '1'],
  ['on two lines', ['retry-after: 1', 'retry-after: 99999999999'], '1'],
  ['within the bound', ['retry-after: 1'], '1'],
]

describe("a platform 429's retry-after passed on: the pause drawn, whole seconds, at most platform.maxPause", () => {
  // Each case's 429 is the first in a row: answers that are not 429s on both routes clear
  // the strikes of every scope it may pause (without a readable value it draws 1 s).
  beforeEach(async () => {
    expect((await list()).statusCode).toBe(200)
    expect((await report()).statusCode).toBe(200)
  })

  it.each(CASES)('a proxied call: %s', async (_name, head, told) => {
    answerOnce(sandbox, '429 Too Many Requests', ['content-type: application/json', ...head], THROTTLED)
    const res = await list()
    expect(res.statusCode).toBe(429)
    expect(res.headers['retry-after']).toBe(told)
    expect(res.body).toBe(THROTTLED.toString())
  })

  it.each(CASES)('a report read: %s', async (_name, head, told) => {
    answerOnce(sandbox, '429 Too Many Requests', ['content-type: application/json', ...head], THROTTLED)
    const res = await report()
    expect(res.statusCode).toBe(429)
    expect(res.headers['retry-after']).toBe(told)
  })
})

// [the platform's retry-after lines, what the caller is told; undefined: nothing]
const FAILED: [string, string[], string | undefined][] = [
  ['delay-seconds 3,000 years ahead', ['retry-after: 99999999999'], String(MAX_PAUSE_S)],
  ['more digits than a double holds', [`retry-after: ${'9'.repeat(400)}`], String(MAX_PAUSE_S)],
  ['an HTTP date 3,000 years ahead', [`retry-after: ${YEARS_AHEAD}`], String(MAX_PAUSE_S)],
  ['an HTTP date a day past', [`retry-after: ${DAY_AGO}`], '0'],
]

// A retry-after the gateway cannot read says no time: the read is sent again, as without one.
const UNREADABLE: [string, string[]][] = [
  ['negative', ['retry-after: -5']],
  ['fractional', ['retry-after: 1.5']],
  ['not a value at all', ['retry-after: abc']],
  ['on two lines', ['retry-after: 1', 'retry-after: 99999999999']],
]

describe("a platform 503 with a retry-after that says no time: the read is retried", () => {
  it.each(UNREADABLE)('a proxied call: %s', async (_name, head) => {
    answerOnce(sandbox, '503 Service Unavailable', ['content-type: text/html', ...head], Buffer.from('<h1>down</h1>'))
    const res = await list()
    expect(res.statusCode).toBe(200)
  })

  it.each(UNREADABLE)('a report read: %s', async (_name, head) => {
    answerOnce(sandbox, '503 Service Unavailable', ['content-type: text/html', ...head], Buffer.from('<h1>down</h1>'))
    const res = await report()
    expect(res.statusCode).toBe(200)
  })
})

describe("a platform 503's retry-after on the 502 GW_UPSTREAM: whole seconds, at most platform.maxPause", () => {
  it.each(FAILED)('a proxied call: %s', async (_name, head, told) => {
    answerOnce(sandbox, '503 Service Unavailable', ['content-type: text/html', ...head], Buffer.from('<h1>down</h1>'))
    const res = await list()
    expect(res.statusCode).toBe(502)
    expect(res.json()).toMatchObject({ code: 'GW_UPSTREAM' })
    expect(res.headers['retry-after']).toBe(told)
  })

  it.each(FAILED)('a report read: %s', async (_name, head, told) => {
    answerOnce(sandbox, '503 Service Unavailable', ['content-type: text/html', ...head], Buffer.from('<h1>down</h1>'))
    const res = await report()
    expect(res.statusCode).toBe(502)
    expect(res.headers['retry-after']).toBe(told)
  })
})

// A platform's 503 fails a job at once here (jobs.retries: 0): the failed job's message is what these cases read.
describe("a report job the platform's 503 failed: the retry time it keeps, at most platform.maxPause ahead", () => {
  const job = async (id: string) => (await gw.proxy.inject({ method: 'GET', url: `/api/v1/jobs/${id}`, headers: { 'x-api-key': KEYS.all } })).json<{ state: string; error: { code: string; message: string } | null }>()

  it.each(FAILED.slice(0, 3))('%s', async (_name, head) => {
    answerOnce(sandbox, '503 Service Unavailable', ['content-type: text/html', ...head], Buffer.from('<h1>down</h1>'))
    const asked = await gw.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=2025-03-01&dateTo=${nextDay()}`, headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.statusCode).toBe(202)
    const { id } = asked.json<{ id: string }>()
    const before = clock.now()
    await waitFor(`job ${id} ended`, async () => (await job(id)).state === 'failed')
    const { error } = await job(id)
    expect(error?.code).toBe('GW_UPSTREAM')
    const at = Date.parse(/\(try again at ([^)]+)\)/.exec(error?.message ?? '')?.[1] ?? '')
    expect(at).toBeGreaterThanOrEqual(before)
    expect(at).toBeLessThanOrEqual(clock.now() + MAX_PAUSE_S * 1000)
  })
})
