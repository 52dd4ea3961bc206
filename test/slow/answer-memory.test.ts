import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSandbox, type Sandbox } from '../../src/sandbox/sandbox.js'
import { imageMemoryEnv } from '../../scripts/image-env.mjs'
import { KEYS, REPORT_PATH, TEAMS_YAML } from '../helpers/build-gateway.js'
import { spawnProbedGateway, type GatewayMemory, type ProbedGateway } from '../helpers/gateway-memory.js'
import { opensslAvailable, privateCa } from '../helpers/private-ca.js'
import { startTlsFront, type TlsFront } from '../helpers/tls-front.js'
import { timeLeftOf, waitFor } from '../helpers/wait.js'

// Memory with the chart's defaults (helm/report-gateway: `config: {}`, the image's
// memory settings, a 512Mi memory limit): the built gateway in a process of its own, its
// in-process cache full, then 100 callers each reading a 50 MiB report at 16 KB/s. Every
// byte of an answer on its way to a caller counts in platform.bufferTotalBytes; past it a
// new answer is refused 503 GW_ANSWER_BUDGET. The process's peak resident size (VmHWM)
// stays under the chart's limit. Counts and bytes are asserted, never a time. The platform
// is reached over plain HTTP (the sandbox as it is) and over TLS (a front with a private
// CA, as a platform behind https is): a socket's reads are 64 KiB each over TCP, 16 KiB
// over TLS, and the image's MALLOC_MMAP_THRESHOLD_ is set for both (Dockerfile).

const MiB = 1024 * 1024
const MB = 1_000_000
/** The chart's memory limit (values.yaml, resources.limits.memory). */
const CHART_LIMIT = 512 * MiB
/** The image's memory settings (the Dockerfile's NODE_OPTIONS and MALLOC_* lines). */
const IMAGE_ENV = imageMemoryEnv(join(import.meta.dirname, '../../Dockerfile'))
const READERS = 100
const REPORT_BYTES = 50 * MiB
const READ_BYTES_PER_S = 16_000
const WAVE = 10
// The setup's own timeout: the waves of slow readers take minutes on a busy machine. Its waits
// take what is left of it as their bound (timeLeftOf), as a test's take testTimeLeft().
const SETUP_TIMEOUT_MS = 420_000
/** The defaults the chart keeps (config/default.yaml): platform.bufferTotalBytes, cache.l1MaxBytes. */
const BUDGET = 128 * MiB
const L1 = 64 * MiB
/** Array buffers besides answers and cached copies: sockets' and zlib's buffers, the buffer pool. */
const OTHER_BUFFERS = 16 * MiB
/** V8's young generation at its largest: two semi-spaces of 16 MiB (the image's --max-semi-space-size=16). */
const YOUNG = 2 * 16 * MiB
/** The socket's reads dead since V8's last collection: it starts the next one once array buffers grew by about 64 MiB. */
const UNCOLLECTED = 64 * MiB
/** A socket read's size: 64 KiB over TCP, one TLS record (16 KiB) over TLS. */
const READ_BYTES: Record<string, number> = { http: 64 * 1024, https: 16 * 1024 }
/** What a read of `bytes` holds resident: glibc maps it (MALLOC_MMAP_THRESHOLD_=16384) with its 16-byte header in whole 4 KiB pages. */
const mapped = (bytes: number) => Math.ceil((bytes + 16) / 4096) * 4096
/** Resident memory besides the start's, the answers' budget and the cache: the young generation and the uncollected reads, as mapped. */
const otherResident = (scheme: string) => YOUNG + (UNCOLLECTED * mapped(READ_BYTES[scheme] as number)) / (READ_BYTES[scheme] as number)
/** Reports of 3 MB that fill the in-process cache (cache.l1MaxBytes 64MiB) twice over. */
const FILLS = 45
const FILL_BYTES = 3 * MB

const reportUrl = (i: number, days = 1) => `${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=2025-0${1 + (i % 9)}-01&dateTo=2025-0${1 + (i % 9)}-${String(days + Math.floor(i / 9)).padStart(2, '0')}`

/** A caller reading its answer at about READ_BYTES_PER_S, in sips every 100 ms: its status, the GW_* code of a refusal, and the bytes it read. */
interface SlowCaller {
  status: () => number | null
  code: () => string | null
  got: () => number
}

/**
 * The slow callers, in a worker thread of their own (test/helpers/slow-readers.mjs): the
 * sandbox makes its 50 MB answers in this thread, and on a loaded machine sips on this
 * thread's timers stalled past platform.readIdleTimeout, so that the gateway rightly cut
 * readers off that the test takes for reading.
 */
class SlowCallers {
  readonly #status = new Int32Array(new SharedArrayBuffer(4 * READERS))
  readonly #got = new Float64Array(new SharedArrayBuffer(8 * READERS))
  readonly #codes = new Map<number, string>()
  readonly #worker = new Worker(new URL('../helpers/slow-readers.mjs', import.meta.url), { workerData: { status: this.#status, got: this.#got, key: KEYS.all, bytesPerSecond: READ_BYTES_PER_S } })
  #next = 0

  constructor() {
    this.#worker.on('message', ({ id, code }: { id: number; code: string }) => this.#codes.set(id, code))
  }

  open(port: number, path: string): SlowCaller {
    const id = this.#next++
    this.#worker.postMessage({ id, port, path })
    return { status: () => this.#status[id] || null, code: () => this.#codes.get(id) ?? null, got: () => this.#got[id] as number }
  }

  /** Ends the worker: its sockets close with it. */
  async close(): Promise<void> {
    await this.#worker.terminate()
  }
}

/** The process's peak resident size so far (Linux: VmHWM), in bytes. */
function peakRss(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmHWM:')) as string
  return Number(line.replace(/\D+/g, '')) * 1024
}

const metric = (text: string, name: string): number => Number(text.split('\n').find((l) => l.startsWith(name))?.split(' ').at(-1) ?? NaN)

const SCHEMES = ['http', ...(opensslAvailable('the answer memory test over TLS') ? ['https'] : [])]

describe.runIf(process.platform === 'linux').each(SCHEMES)('memory with the chart\'s defaults, the cache full and 100 slow readers of 50 MiB reports, the platform over %s', (scheme) => {
  let sandbox: Sandbox
  let front: TlsFront | null = null
  let gw: ProbedGateway
  const callers: SlowCaller[] = []
  const readers = new SlowCallers()
  let mostHeld = 0
  const filled: string[] = []
  let evicted = ''
  let peak = 0
  let startRss = 0
  let metrics = ''
  let held: GatewayMemory | null = null

  beforeAll(async () => {
    const started = Date.now()
    sandbox = await startSandbox()
    const tls: Record<string, string> = {}
    if (scheme === 'https') {
      const files = privateCa(mkdtempSync(join(tmpdir(), 'answer-memory-tls-')), ['DNS:localhost', 'IP:127.0.0.1'])
      front = await startTlsFront(sandbox.url, files)
      tls.NODE_EXTRA_CA_CERTS = files.ca
    }
    gw = await spawnProbedGateway({ env: { PLATFORM_BASE_URL: front?.url ?? sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ...tls, ...IMAGE_ENV }, yaml: TEAMS_YAML })
    const pid = gw.child.pid as number
    const start = await gw.memory()
    startRss = start.rss
    const scrape = async () => (await request(`${gw.adminUrl}/metrics`)).body.text()

    // The cache filled twice over with reports of 3 MB: the first ones are out again.
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'large', bytes: FILL_BYTES, times: FILLS })
    for (let i = 0; i < FILLS; i++) {
      const res = await request(`${gw.url}${reportUrl(i)}`, { headers: { 'x-api-key': KEYS.all } })
      await res.body.dump()
      filled.push(`${res.statusCode} ${String(res.headers['x-cache'])}`)
    }
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'large', bytes: FILL_BYTES, times: 1 })
    const again = await request(`${gw.url}${reportUrl(0)}`, { headers: { 'x-api-key': KEYS.all } })
    await again.body.dump()
    evicted = String(again.headers['x-cache'])

    // 100 callers of distinct 50 MiB reports, each reading at 16 KB/s, arriving ten at a
    // time, each ten once the ten before were answered: the sandbox, in this process,
    // makes each answer in turn, and a hundred at once would wait past platform.queueTimeout.
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'large', bytes: REPORT_BYTES, times: READERS })
    const watch = setInterval(() => void scrape().then((text) => (mostHeld = Math.max(mostHeld, metric(text, 'gateway_answer_bytes'))), () => undefined), 250)
    try {
      for (let i = 0; i < READERS; i++) {
        callers.push(readers.open(gw.port, reportUrl(i, 10)))
        if (callers.length % WAVE === 0) await waitFor(`callers ${callers.length - WAVE + 1}-${callers.length} answered`, () => callers.every((c) => c.status() !== null), timeLeftOf(started, SETUP_TIMEOUT_MS), 100)
      }
      // The readers answered 200 go on reading: their answers are held as they read. On a
      // busy machine the waves take minutes, and the first served readers may have read
      // their whole answer by now (each sip takes at least what its socket holds).
      const served = callers.filter((c) => c.status() === 200)
      const read = served.map((c) => c.got())
      const readOn = (c: SlowCaller, i: number) => c.got() > (read[i] as number) + 4 * READ_BYTES_PER_S || c.got() >= REPORT_BYTES
      const reading = () => `the served callers reading on or done (bytes read before, now: ${served.map((c, i) => `${read[i]}, ${c.got()}`).join('; ')}; the gateway said:\n${gw.output().split('\n').filter((l) => l.includes('cut off')).slice(-10).join('\n')})`
      await waitFor(reading, () => served.every(readOn), timeLeftOf(started, SETUP_TIMEOUT_MS), 200)
      metrics = await scrape()
      peak = peakRss(pid)
      held = await gw.memory()
    } finally {
      clearInterval(watch)
    }
    const statuses = new Map<string, number>()
    for (const c of callers) statuses.set(`${c.status()} ${c.code() ?? ''}`.trim(), (statuses.get(`${c.status()} ${c.code() ?? ''}`.trim()) ?? 0) + 1)
    console.log(
      [
        `answer memory (the platform over ${scheme}): ${READERS} callers of ${REPORT_BYTES / MiB} MiB reports at ${READ_BYTES_PER_S / 1000} KB/s, the cache filled with ${FILLS} reports of ${FILL_BYTES / MB} MB`,
        `  statuses: ${[...statuses].map(([s, n]) => `${n} × ${s}`).join(', ')}`,
        `  peak RSS (VmHWM) ${(peak / MiB).toFixed(0)} MiB (bound ${((startRss + BUDGET + L1 + otherResident(scheme)) / MiB).toFixed(0)} MiB, the chart's limit ${CHART_LIMIT / MiB} MiB); RSS after a full collection at start ${(start.rss / MiB).toFixed(0)} MiB`,
        `  after a full collection, readers still reading: RSS ${((held?.rss ?? NaN) / MiB).toFixed(0)} MiB, array buffers ${((held?.arrayBuffers ?? NaN) / MiB).toFixed(0)} MiB (answers' budget ${BUDGET / MiB} MiB and cache ${L1 / MiB} MiB)`,
        `  answers held: at most ${(mostHeld / MiB).toFixed(1)} MiB seen (platform.bufferTotalBytes 128 MiB); refused: ${metric(metrics, 'gateway_answer_budget_refusals_total')}`,
      ].join('\n'),
    )
  }, SETUP_TIMEOUT_MS)

  afterAll(async () => {
    await readers.close()
    await gw?.close()
    await front?.close()
    await sandbox?.close()
  })

  it('fills its cache: every fill a MISS, and the first report out of it again', () => {
    expect(filled).toEqual(Array(FILLS).fill('200 MISS'))
    expect(evicted).toBe('MISS')
  })

  it('answers every caller 200 or 503 GW_ANSWER_BUDGET, serving as many as the budget holds', () => {
    const answers = callers.map((c) => `${c.status()} ${c.code() ?? ''}`.trim())
    // On a busy machine the sandbox (this process) makes its 50 MB answers slower, the
    // governor learns a lower limit, and a caller that waits past platform.queueTimeout is
    // refused 503 GW_OVERLOADED, one whose answer cannot come within its deadline 504
    // GW_UPSTREAM_TIMEOUT (governor.md, dispatch rule 1): refusals that hold no memory
    // either.
    const refusals = ['503 GW_ANSWER_BUDGET', '503 GW_OVERLOADED', '504 GW_UPSTREAM_TIMEOUT']
    expect(answers.filter((a) => a !== '200' && !refusals.includes(a))).toEqual([])
    expect(answers.filter((a) => a === '200').length).toBeGreaterThanOrEqual(1)
    const refused = answers.filter((a) => a === '503 GW_ANSWER_BUDGET').length
    expect(refused).toBeGreaterThanOrEqual(1)
    expect(metric(metrics, 'gateway_answer_budget_refusals_total{credential="default"}')).toBe(refused)
  })

  it('holds no more than platform.bufferTotalBytes of answers at once, and no answer\'s bytes outside it', () => {
    expect(mostHeld).toBeGreaterThan(0)
    expect(mostHeld).toBeLessThanOrEqual(BUDGET)
    // What a full collection leaves of array buffers: the answers held, the cache's copies, little else.
    expect(held?.arrayBuffers).toBeLessThanOrEqual(BUDGET + L1 + OTHER_BUFFERS)
  })

  it('keeps its peak resident size within its start, the answers\' budget and the cache, and under the chart\'s memory limit', () => {
    expect(peak).toBeGreaterThan(0)
    expect(peak).toBeLessThanOrEqual(startRss + BUDGET + L1 + otherResident(scheme))
    expect(peak).toBeLessThan(CHART_LIMIT)
  })
})
