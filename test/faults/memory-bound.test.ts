import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Agent, request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSandbox, type Sandbox } from '../../src/sandbox/sandbox.js'
import { KEYS, TEAMS_YAML } from '../helpers/build-gateway.js'
import { heapGroups, heapGrowth, spawnProbedGateway, type GatewayMemory, type HeapGroup, type ProbedGateway } from '../helpers/gateway-memory.js'
import { redisAvailability, startRedis, type RedisServer } from '../helpers/start-redis.js'

// Memory is bounded whatever callers send. The built gateway, as
// production runs it (dist/main.js in a process of its own, over real sockets, so that
// the fast path of hits runs too), takes 30,000 requests of every kind a caller can make
// up: refused (401, 403, 400, 429), oversized, unique and 15 KB reports it must fetch and
// cache, hits. Its caches are set small, so that every bounded structure is full well
// before 10,000 requests, and so is every team's part of a structure with a part per team
// (the scoped team's unique reports carry a 4 KB padding: its part of the refresh-ahead
// watches, a fifth of 16 MiB, is full after about 300 of them): whatever still grows from
// 10,000 to 20,000 and again to 30,000 grows with the requests, and is a leak.

const { available: redisAvailable, notice } = redisAvailability()
if (notice) console.warn(notice)

const MB = 1024 * 1024
const CHECKPOINTS = [10_000, 20_000, 30_000]
const TOTAL = CHECKPOINTS.at(-1) as number
const WORKERS = 24
// The stream's end is its count of requests, sent however slowly. Its only bound is the
// setup's timeout, sized for a loaded 2-core machine: the stream and its checkpoints take
// about 90 s at a load of 8 on two cores. Short of that timeout by the margin (a
// checkpoint's heap snapshot fits in it), the stream fails saying how far it got.
const SETUP_TIMEOUT_MS = 900_000
const NAMING_MARGIN_MS = 60_000
const RSS_BUDGET = 100 * MB
// Per 10,000 requests: a structure keeping one object for every request of one kind
// (500 of each kind) passes these in both intervals; a full cache's churn, or what was
// in flight at one snapshot, does not.
const GROUP_BYTES_LIMIT = MB
const GROUP_COUNT_LIMIT = 400
const HEAP_GROWTH_LIMIT = 8 * MB

const REPORT = '/api/v1/report/campaigns/get'
const DAY = '2025-06-02'
// Settled dates (a day's figures no longer change): entries stay fresh for the whole run.
const DATES = `dateFrom=${DAY}&dateTo=${DAY}`
/** A unique padding of about 15 KB: with the rest of a request, close to Node's 16 KB header limit. */
const pad = (i: number, bytes = 15 * 1024) => `${i}x${'a'.repeat(bytes)}`
const unknownKey = (i: number) => `rgw_unknown_${String(i).padStart(32, '0')}`
const HOT = Array.from({ length: 8 }, (_, i) => `${REPORT}?advertiserId=${101 + (i % 2)}&dateFrom=2025-05-0${1 + i}&dateTo=2025-05-0${1 + i}&byDate=1`)
const uniqueReport = (i: number) => `${REPORT}?advertiserId=101&${DATES}&n=${i}`
// Out of the L1 by then (it holds under 200 of these reports); still in Redis, with it.
const EARLIER = 2000

const YAML = `${TEAMS_YAML}
cache:
  l1MaxBytes: 256KiB
`

interface Kind {
  name: string
  expect: number[]
  send: (i: number) => { path: string; key: string | null }
}

// One cycle of 20 requests; every URL but the hits' is new.
const CYCLE: Kind[] = [
  { name: 'forbidden, 15 KB', expect: [403], send: (i) => ({ path: `${REPORT}?advertiserId=201&${DATES}&pad=${pad(i)}`, key: KEYS.growth }) },
  { name: 'hit', expect: [200], send: (i) => ({ path: HOT[i % HOT.length] as string, key: KEYS.all }) },
  { name: 'unknown key', expect: [401], send: (i) => ({ path: uniqueReport(i), key: unknownKey(i) }) },
  { name: 'invalid', expect: [400], send: (i) => ({ path: `${REPORT}?advertiserId=101&dateFrom=2025-13-${i}&dateTo=${DAY}`, key: KEYS.growth }) },
  { name: 'unique report', expect: [200], send: (i) => ({ path: uniqueReport(i), key: KEYS.all }) },
  { name: 'hit', expect: [200], send: (i) => ({ path: HOT[i % HOT.length] as string, key: KEYS.all }) },
  { name: 'forbidden', expect: [403], send: (i) => ({ path: `${REPORT}?advertiserId=201&${DATES}&n=${i}`, key: KEYS.growth }) },
  { name: 'invalid, 15 KB', expect: [400], send: (i) => ({ path: `${REPORT}?advertiserId=101&dateFrom=${DAY}&dateTo=2024-01-01&pad=${pad(i)}`, key: KEYS.growth }) },
  { name: 'unique report, 15 KB', expect: [200], send: (i) => ({ path: `${REPORT}?advertiserId=101&${DATES}&pad=${pad(i)}`, key: KEYS.all }) },
  { name: 'hit', expect: [200], send: (i) => ({ path: HOT[i % HOT.length] as string, key: KEYS.all }) },
  { name: 'oversized', expect: [400, 414, 431], send: (i) => ({ path: `${REPORT}?advertiserId=101&${DATES}&pad=${pad(i, 20 * 1024)}`, key: KEYS.all }) },
  { name: 'unknown key, 15 KB', expect: [401], send: (i) => ({ path: `${REPORT}?advertiserId=101&${DATES}&pad=${pad(i)}`, key: unknownKey(i) }) },
  { name: 'rate-limited', expect: [200, 429], send: (i) => ({ path: uniqueReport(i), key: KEYS.limited }) },
  // The unique report of 100 cycles before.
  { name: 'earlier report', expect: [200], send: (i) => ({ path: uniqueReport(Math.max(4, i - 9 - EARLIER)), key: KEYS.all }) },
  { name: 'forbidden, 15 KB', expect: [403], send: (i) => ({ path: `${REPORT}?advertiserId=201&${DATES}&pad=${pad(i)}`, key: KEYS.growth }) },
  { name: 'unique report, scoped team', expect: [200], send: (i) => ({ path: `${REPORT}?advertiserId=102&${DATES}&pad=${pad(i, 4 * 1024)}`, key: KEYS.growth }) },
  { name: 'no key', expect: [401], send: (i) => ({ path: uniqueReport(i), key: null }) },
  { name: 'hit', expect: [200], send: (i) => ({ path: HOT[i % HOT.length] as string, key: KEYS.all }) },
  { name: 'unique proxied read', expect: [404], send: (i) => ({ path: `/api/v1/nothing/x${i}?pad=${pad(i, 1024)}`, key: KEYS.all }) },
  { name: 'invalid, 15 KB', expect: [400], send: (i) => ({ path: `${REPORT}?advertiserId=101&${DATES}&byDate=maybe&pad=${pad(i)}`, key: KEYS.growth }) },
]

interface Checkpoint {
  requests: number
  memory: GatewayMemory
  heap: Map<string, HeapGroup>
  /** Measured again once the heap snapshot is written: what the snapshot itself left resident. */
  afterSnapshot: GatewayMemory
}

const mb = (n: number) => `${(n / MB).toFixed(1)} MB`
const count = (n: number) => n.toLocaleString('en')
const signed = (n: number, text: string) => `${n >= 0 ? '+' : ''}${text}`

for (const variant of [{ name: 'L1 only', redis: false }, { name: 'L1 and Redis', redis: true }]) {
  describe.skipIf(variant.redis && !redisAvailable)(`memory under 30,000 hostile and unique requests (${variant.name})`, () => {
    let sandbox: Sandbox
    let redis: RedisServer | undefined
    let gw: ProbedGateway
    let dir: string
    const agent = new Agent({ connections: WORKERS, keepAliveTimeout: 30_000 })
    const statuses = new Map<string, Map<number, number>>()
    let baseline: GatewayMemory
    const checkpoints: Checkpoint[] = []
    let streamMs = 0
    let deadline = 0

    const send = async (i: number) => {
      const kind = CYCLE[i % CYCLE.length] as Kind
      const { path, key } = kind.send(i)
      let status = 0
      try {
        const res = await request(`${gw.url}${path}`, { dispatcher: agent, headers: key === null ? {} : { 'x-api-key': key } })
        await res.body.dump()
        status = res.statusCode
      } catch {
        // Status 0: the connection failed; the statuses' test names the kind.
      }
      const byStatus = statuses.get(kind.name) ?? new Map<number, number>()
      byStatus.set(status, (byStatus.get(status) ?? 0) + 1)
      statuses.set(kind.name, byStatus)
      // The sandbox keeps every request it had: not the gateway's memory, but the test's.
      if (i % 1000 === 0) sandbox.clearRequests()
    }

    /** Requests from..to-1, WORKERS at a time; fails saying how far it got once the setup's time is all but up. */
    const stream = async (from: number, to: number) => {
      const started = performance.now()
      let n = from
      await Promise.all(
        Array.from({ length: WORKERS }, async () => {
          while (n < to) {
            if (performance.now() > deadline) {
              throw new Error(`${count(n)} of ${count(TOTAL)} requests sent in ${((streamMs + performance.now() - started) / 1000).toFixed(1)} s, and the setup's ${SETUP_TIMEOUT_MS / 1000} s all but up`)
            }
            await send(n++)
          }
        }),
      )
      streamMs += performance.now() - started
    }

    const checkpoint = async (requests: number): Promise<Checkpoint> => {
      const memory = await gw.memory()
      const file = join(dir, `${requests}.heapsnapshot`)
      await gw.heapSnapshot(file)
      const heap = heapGroups(file)
      rmSync(file)
      return { requests, memory, heap, afterSnapshot: await gw.memory() }
    }

    /** What each interval between checkpoints added, by heap group. */
    const intervals = () => checkpoints.slice(1).map((c, i) => heapGrowth((checkpoints[i] as Checkpoint).heap, c.heap))

    /**
     * The resident memory the requests added: each stretch of requests counted from what
     * was resident before it, after the previous snapshot; writing a snapshot leaves the
     * memory it took with the allocator, and that is the test's doing, not the requests'.
     */
    const requestsRss = () =>
      checkpoints.reduce((sum, c, i) => sum + c.memory.rss - (i === 0 ? baseline.rss : (checkpoints[i - 1] as Checkpoint).afterSnapshot.rss), 0)

    beforeAll(async () => {
      deadline = performance.now() + SETUP_TIMEOUT_MS - NAMING_MARGIN_MS
      dir = mkdtempSync(join(tmpdir(), 'rgw-memory-'))
      sandbox = await startSandbox()
      redis = variant.redis ? await startRedis() : undefined
      gw = await spawnProbedGateway({
        env: { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ...(redis ? { REDIS_URL: redis.url } : {}) },
        yaml: YAML,
      })
      baseline = await gw.memory()
      let sent = 0
      for (const requests of CHECKPOINTS) {
        await stream(sent, requests)
        sent = requests
        checkpoints.push(await checkpoint(requests))
      }
      const last = checkpoints.at(-1) as Checkpoint
      const grown = intervals()
      console.log(
        [
          `memory-bound (${variant.name}): ${count(TOTAL)} requests in ${(streamMs / 1000).toFixed(1)} s`,
          ...[...statuses].map(([kind, byStatus]) => `  ${kind}: ${[...byStatus].map(([s, n]) => `${n} × ${s}`).join(', ')}`),
          `  rss after a full collection: ${mb(baseline.rss)} at start; ${checkpoints.map((c) => `${mb(c.memory.rss)} at ${count(c.requests)} (${mb(c.afterSnapshot.rss)} after its heap snapshot)`).join('; ')}`,
          `  added by the requests: ${mb(requestsRss())} (budget ${mb(RSS_BUDGET)})`,
          `  rss before that collection (the young generation, pages V8 keeps for reuse, the snapshots' leftovers): ${mb(baseline.rssBeforeGc)} at start, ${mb(last.memory.rssBeforeGc)} at ${count(last.requests)}`,
          ...(['heapUsed', 'external', 'arrayBuffers'] as const).map((field) => `  ${field}: ${mb(baseline[field])} at start, ${checkpoints.map((c) => mb(c.memory[field])).join(' → ')}`),
          ...grown.map((growth, i) =>
            [
              `  heap from ${count(CHECKPOINTS[i] as number)} to ${count(CHECKPOINTS[i + 1] as number)} requests, by type and constructor, most grown (self size, objects):`,
              ...growth.slice(0, 5).map((g) => `    ${g.name}: ${signed(g.bytes, `${(g.bytes / 1024).toFixed(0)} KB`)}, ${signed(g.count, String(g.count))}`),
              ...[...growth].sort((a, b) => b.count - a.count).slice(0, 3).map((g) => `    ${g.name}: ${signed(g.count, String(g.count))} objects, ${signed(g.bytes, `${(g.bytes / 1024).toFixed(0)} KB`)}`),
            ].join('\n'),
          ),
        ].join('\n'),
      )
    }, SETUP_TIMEOUT_MS)

    afterAll(async () => {
      await gw?.close()
      await agent.close()
      await redis?.close()
      await sandbox?.close()
      if (dir) rmSync(dir, { recursive: true, force: true })
    })

    it('answers every request as its kind says', () => {
      for (const kind of CYCLE) {
        const answered = [...(statuses.get(kind.name) ?? new Map<number, number>()).keys()]
        expect(answered.filter((s) => !kind.expect.includes(s)), kind.name).toEqual([])
      }
    })

    it('adds less than 100 MB to the resident memory of its start', () => {
      expect(requestsRss()).toBeLessThan(RSS_BUDGET)
    })

    it('keeps no heap structure growing with the requests from 10,000 to 20,000 and again to 30,000', () => {
      const tooMuch = (g: HeapGroup) => g.bytes > GROUP_BYTES_LIMIT || g.count > GROUP_COUNT_LIMIT
      const [first, second] = intervals() as [ReturnType<typeof heapGrowth>, ReturnType<typeof heapGrowth>]
      const again = new Set(second.filter(tooMuch).map((g) => g.name))
      expect(first.filter((g) => tooMuch(g) && again.has(g.name))).toEqual([])
      const [at10k, , at30k] = checkpoints as [Checkpoint, Checkpoint, Checkpoint]
      for (const field of ['heapUsed', 'external', 'arrayBuffers'] as const) {
        expect(at30k.memory[field] - at10k.memory[field], field).toBeLessThan(HEAP_GROWTH_LIMIT)
      }
    })
  })
}
