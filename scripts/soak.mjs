#!/usr/bin/env node
/**
 * `npm run soak -- --minutes N [--rate R] [--sample S] [--chaos | --rolling] [--seed K] [--faults a,b] [--keep-logs DIR]`:
 * the gateway under a steady mixed load for N minutes (default 1), to find what only time
 * shows: leaks, slow drift, errors that come once in thousands of requests.
 *
 * Starts, on free loopback ports: one redis-server, the platform sandbox
 * (dist/sandbox/main.js) and two gateway replicas (dist/main.js) sharing both. Then sends
 * R requests a second, open loop, alternating between the replicas: report hits, report
 * misses (a new report each), bad input (400, 401, 403), campaign writes and proxied
 * reads, and a team over its rate limit (200 or 429). Every S seconds (default: a
 * twentieth of the run, 5 to 60 s) it prints the answers by status, p50/p99, and each
 * replica's RSS and heap after a full GC (each replica runs with --expose-gc and
 * scripts/soak-probe.mjs, which collects and reports on SIGUSR2; and with the image's
 * memory settings, read from the Dockerfile), Redis's memory and the
 * machine's load average. At the end: a summary, and the replicas are stopped with SIGTERM.
 *
 * Without --chaos (default 30 requests/s, the sandbox at 20 ms): exits 1 on any answer
 * outside the expected statuses (any 5xx included), any request lost (connection error or
 * no answer within 10 s), or a replica that does not exit 0.
 *
 * With --chaos (default 60 requests/s): the platform answers in 50-200 ms with 2 % 5xx,
 * 0.4 % 429, 0.2 % hangs and 1 % bodies cut halfway; the replicas log in with the password
 * grant and call it with platform.timeout 5s; every 200 report or proxied read is compared
 * byte for byte with the same request to a pristine sandbox of the same seed; and one
 * fault at a time (scripts/soak-faults.mjs), in an order drawn from --seed, each announced
 * with its time (--faults a,b: only those whose names hold a or b), from 10 % of the run on, 8-12 s apart (20-40 s in runs of 10 minutes or
 * more). The client stands in for a load balancer: a replica being restarted gets no new
 * requests, and a request refused by a replica that is down or shutting down (a connection
 * refused or reset, 503 GW_SHUTTING_DOWN) is sent once to the other, writes only when they
 * cannot have reached it. Targets, printed per fault and in total (scripts/soak-targets.mjs);
 * the run exits 1 when one is missed:
 *   - 0 wrong bodies;
 *   - 0 answers outside the documented statuses and codes (a 500 is a gateway fault);
 *   - after each fault ends, errors back to the baseline rate (that of the calm stretches,
 *     over 5-s windows) within 5 s; refusals while the platform pauses a route or the
 *     credential (its 429s, honoured as documented) and answers that came after the next
 *     fault began are counted apart;
 *   - a report answered 200 before is answered 200 during and after every fault (its copy
 *     is within its staleIfError window, 24 h);
 *   - what Redis holds for the seats and the learned limit equals what the replicas say
 *     (GET /admin/status) within one seatLease (5 s) after each fault;
 *   - no replica exits unless told to, and each told to stop with SIGTERM exits 0;
 *   - RSS after the last fault within 20 % of RSS after the first minute, per replica.
 *
 * With --rolling (default 100 requests/s): three replicas, restarted one after the other
 * with SIGTERM, round after round, under the load (scripts/soak-rolling.mjs: the load
 * balancer learns a replica is not ready by asking its /readyz every second, and sends a
 * request whose connection failed before an answer once to another replica). Exits 1 on
 * any answer outside the expected statuses, any request lost, or a replica that does not
 * exit 0: a rolling restart is to cost no answer. Prints what the stopping replicas
 * answered meanwhile.
 *
 * Bounded: at most N x 60 x R requests, at most 64 in flight (256 with --chaos), the whole
 * run at most N + 2 minutes (+ 3 with --chaos). Every process it starts is stopped at the
 * end, on error and on SIGINT/SIGTERM; --keep-logs copies their logs to DIR first
 * (with --chaos, answers.log too: every answer the verdict judged, a JSON line each).
 * Needs `npm run build` (the npm script does it) and redis-server (7+ for --chaos) on PATH.
 *
 * This file is the run itself; its parts are modules beside it: soak-options.mjs (the
 * options and targets), soak-load.mjs (what is sent), soak-processes.mjs (the processes
 * and the run's clock), soak-measure.mjs, soak-faults.mjs, soak-targets.mjs (the pure
 * judgements) and soak-verdict.mjs (the chaos run's report).
 */
import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { cpus, loadavg, totalmem } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { clearInterval, setInterval } from 'node:timers'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { Agent, request } from 'undici'
import { DEMO_CREDENTIALS } from '../dist/sandbox/accounts.js'
import { DEFAULT_SANDBOX_SEED, startSandbox } from '../dist/sandbox/sandbox.js'
import { hashApiKey } from '../dist/access/api-keys.js'
import { freePort } from './free-port.mjs'
import { PLATFORM_LATENCY, PLATFORM_WEATHER } from './soak-faults.mjs'
import { disagreement, liveLeases, seededRandom, sharedLimit, shuffled } from './soak-targets.mjs'
import { CHAOS, CHOSEN_FAULTS, ROLLING, HARD_LIMIT_MS, IMAGE_MEMORY_ENV, LONG_RUN_S, MAX_IN_FLIGHT, MINUTES, SEAT_LEASE_S, PLATFORM_LATENCY_MS, PROBE, RATE, RECOVERY_TARGET_S, REQUEST_TIMEOUT_MS, SAMPLE_S, SEED, TOTAL } from './soak-options.mjs'
import { ADMIN_TOKEN, CREDENTIAL, GATEWAY_SECRET, KEY_PREFIX, KEYS, LIMIT, requestFor, WRITER_ACCOUNT } from './soak-load.mjs'
import { keepLogs, launch, log, runSeconds, runStart, startRun, started, stopAll, tail, tmp, until } from './soak-processes.mjs'
import { Ledger, mb, memoryOf, ms, percentile, secs, Tally } from './soak-measure.mjs'
import { chaosVerdict, logSummary } from './soak-verdict.mjs'
import { READINESS_MS, rollingRestarts, watchReadiness } from './soak-rolling.mjs'

// ---------------------------------------------------------------- run

async function main() {
  const redisVersion = spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).stdout?.trim()
  if (!redisVersion) throw new Error('redis-server is not on PATH (apt-get install -y redis-server)')

  // ---- Redis (started again, on its port, by a fault)
  const redisPort = await freePort()
  const redisArgs = ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', tmp, ...(CHAOS ? ['--enable-debug-command', 'local'] : [])]
  const redisClient = new Redis({ port: redisPort, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 200 })
  redisClient.on('error', () => undefined)
  const infra = { redis: null, sandbox: null }
  const startRedis = async () => {
    infra.redis = launch('redis', 'redis-server', redisArgs)
    await until('redis-server', infra.redis, async () => {
      if (redisClient.status === 'wait') await redisClient.connect()
      return (await redisClient.ping()) === 'PONG'
    })
  }
  await startRedis()

  // ---- the platform sandbox (killed and started again, on its port, by a fault)
  const sandboxPort = await freePort()
  const sandboxUrl = `http://127.0.0.1:${sandboxPort}`
  const control = async (method, path, body) => {
    const res = await request(`${sandboxUrl}/__sandbox${path}`, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined })
    const text = await res.body.text()
    if (res.statusCode >= 300) throw new Error(`sandbox control ${method} ${path}: ${res.statusCode} ${text}`)
    return text ? JSON.parse(text) : null
  }
  let platformToken = null
  const startPlatform = async () => {
    const t0 = performance.now()
    infra.sandbox = launch('sandbox', process.execPath, ['dist/sandbox/main.js'], { HOST: '127.0.0.1', PORT: String(sandboxPort), SANDBOX_LATENCY_MS: String(CHAOS ? 0 : PLATFORM_LATENCY_MS), LOG_LEVEL: 'warn' })
    await until('the sandbox', infra.sandbox, async () => {
      if (CHAOS) {
        await control('POST', '/latency', PLATFORM_LATENCY)
        await control('POST', '/weather', PLATFORM_WEATHER)
        return true
      }
      platformToken = (await control('POST', '/tokens', { accountId: 100, ttlSeconds: 7 * 86_400 })).access_token
      return typeof platformToken === 'string'
    })
    return `listening after ${((performance.now() - t0) / 1000).toFixed(1)} s`
  }
  await startPlatform()

  // ---- what each answer is checked against: a sandbox of the same seed nobody writes to
  const pristine = CHAOS ? await startSandbox({ seed: DEFAULT_SANDBOX_SEED }) : null
  const pristineToken = pristine?.issueToken()
  const expected = new Map()
  const expectedBody = (r) => {
    const key = `${r.method} ${r.path} ${r.body ? JSON.stringify(r.body) : ''}`
    let body = expected.get(key)
    if (!body) {
      const headers = { authorization: `Bearer ${pristineToken}`, ...(r.body ? { 'content-type': 'application/json' } : {}) }
      body = request(`${pristine.url}${r.path}`, { method: r.method, headers, body: r.body ? JSON.stringify(r.body) : undefined }).then(async (res) => {
        const bytes = Buffer.from(await res.body.arrayBuffer())
        if (res.statusCode !== 200) throw new Error(`the pristine sandbox answered ${res.statusCode} to ${r.method} ${r.path}`)
        return bytes
      })
      // Misses are asked once: only what is asked again is kept.
      if (r.kind !== 'miss') expected.set(key, body)
    }
    return body
  }

  // ---- the replicas (killed and started again, on their ports, by faults)
  const configFile = join(tmp, 'gateway.yaml')
  writeFileSync(
    configFile,
    [
      'teams:',
      `  reader: { keys: ["${hashApiKey(KEYS.reader)}"], advertisers: ["*"] }`,
      `  writer: { keys: ["${hashApiKey(KEYS.writer)}"], advertisers: [${WRITER_ACCOUNT}], write: true }`,
      `  limited: { keys: ["${hashApiKey(KEYS.limited)}"], advertisers: ["*"], rateLimit: { max: ${LIMIT.max}, window: ${LIMIT.window} } }`,
      // The writer's creative sets are looked up where the sandbox lists them.
      'ownership:',
      '  creativeSets: { check: lookup, listPath: /api/v1/creative-set/get }',
      // A hung platform call ends within 5 s, before the client gives up (10 s).
      ...(CHAOS ? ['platform:', '  timeout: 5s'] : []),
      '',
    ].join('\n'),
  )
  const platformLogin = CHAOS
    ? { PLATFORM_USERNAME: DEMO_CREDENTIALS.username, PLATFORM_PASSWORD: DEMO_CREDENTIALS.password, PLATFORM_CLIENT_ID: String(DEMO_CREDENTIALS.clientId), PLATFORM_CLIENT_SECRET: DEMO_CREDENTIALS.clientSecret }
    : { PLATFORM_TOKEN: platformToken }
  const unexpectedExits = []
  const sigtermExits = []
  const replicas = []
  const startReplica = async (slot) => {
    const t0 = performance.now()
    const proc = launch(slot.name, process.execPath, ['--expose-gc', '--import', PROBE, 'dist/main.js'], {
      HOST: '127.0.0.1',
      PORT: String(slot.port),
      ADMIN_HOST: '127.0.0.1',
      ADMIN_PORT: String(slot.adminPort),
      ADMIN_TOKEN,
      PLATFORM_BASE_URL: sandboxUrl,
      ...platformLogin,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      GATEWAY_SECRET,
      CONFIG_FILE: configFile,
      LOG_LEVEL: 'warn',
      ...IMAGE_MEMORY_ENV,
    })
    slot.proc = proc
    void proc.exited.then((code) => {
      if (proc.told !== null || stopping) return
      unexpectedExits.push(`${runSeconds().toFixed(1)} s: ${slot.name} exited (${code}) untold:\n${tail(proc)}`)
      console.log(`[${secs(runSeconds())}] ${slot.name} EXITED (${code}) without being told to`)
      if (CHAOS) {
        slot.out = true
        void startReplica(slot).then(() => (slot.out = false), (err) => log(`${slot.name} did not start again: ${err.message}`))
      }
    })
    await until(slot.name, proc, async () => (await request(`${slot.adminUrl}/readyz`)).statusCode === 200)
    return (performance.now() - t0) / 1000
  }
  let stopping = false
  for (const name of ROLLING ? ['replica-a', 'replica-b', 'replica-c'] : ['replica-a', 'replica-b']) {
    const [port, adminPort] = [await freePort(), await freePort()]
    const slot = { name, port, adminPort, url: `http://127.0.0.1:${port}`, adminUrl: `http://127.0.0.1:${adminPort}`, proc: null, out: false, newReports: 0 }
    await startReplica(slot)
    replicas.push(slot)
  }

  const cpu = cpus()
  console.log(`# Soak: npm run soak -- --minutes ${MINUTES} --rate ${RATE}${CHAOS ? ` --chaos --seed ${SEED}` : ''}${ROLLING ? ' --rolling' : ''}`)
  console.log(
    `machine: ${cpu.length} x ${cpu[0]?.model.trim() ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, load ${loadavg()[0]?.toFixed(1)}; Node ${process.versions.node}; ${redisVersion.split(' ').slice(0, 3).join(' ')}`,
  )
  const platformLine = CHAOS
    ? `the sandbox at ${PLATFORM_LATENCY.ms}-${PLATFORM_LATENCY.maxMs} ms, ${PLATFORM_WEATHER.serverErrors * 100} % 5xx, ${PLATFORM_WEATHER.throttles * 100} % 429, ${PLATFORM_WEATHER.hangs * 100} % hangs, ${PLATFORM_WEATHER.cuts * 100} % bodies cut`
    : `the sandbox at ${PLATFORM_LATENCY_MS} ms`
  console.log(
    `load: ${TOTAL} requests at ${RATE}/s over ${replicas.length} replicas (one Redis, ${platformLine}); per 20: 9 report hits, 3 misses, 4 from a team limited to ${LIMIT.max}/${LIMIT.window}, 2 bad, 1 write, 1 proxied read${ROLLING ? `; the replicas restarted one after the other with SIGTERM, round after round, the balancer asking their /readyz every ${READINESS_MS / 1000} s` : ''}`,
  )
  console.log('')
  console.log(`| time | requests | 2xx | 400/401/403 | 429 | 5xx | lost | p50 | p99 | ${replicas.map((r) => `${r.name.slice(-1).toUpperCase()} rss / heap MB | `).join('')}redis MB | load 1m |`)
  console.log(`|---:|---:|---:|---:|---:|---:|---:|---:|---:|${replicas.map(() => '---:|').join('')}---:|---:|`)

  const agent = new Agent({ connections: CHAOS ? 128 : 32, keepAliveTimeout: 30_000, headersTimeout: REQUEST_TIMEOUT_MS, bodyTimeout: REQUEST_TIMEOUT_MS })
  const overall = new Tally()
  let interval = new Tally()
  const byKind = new Map()
  const xCache = new Map()
  const unexpected = []
  const ledger = new Ledger()
  let inFlight = 0
  let sent = 0

  /** One try on one replica: its status, GW code, x-cache and body check, or how it was lost. */
  const attempt = async (gw, r) => {
    const headers = r.key ? { 'x-api-key': r.key } : {}
    if (r.body) headers['content-type'] = 'application/json'
    try {
      const res = await request(`${gw.url}${r.path}`, { method: r.method, headers, body: r.body ? JSON.stringify(r.body) : undefined, dispatcher: agent })
      if (!CHAOS) {
        await res.body.dump()
        return { status: res.statusCode, xCache: res.headers['x-cache'] ?? null, code: null }
      }
      const body = Buffer.from(await res.body.arrayBuffer())
      const out = { status: res.statusCode, xCache: res.headers['x-cache'] ?? null, code: null, wrongBody: null }
      if (res.statusCode >= 400) {
        try {
          const { code, message } = JSON.parse(body.toString('utf8'))
          out.code = code ?? null
          out.message = typeof message === 'string' ? message : null
          out.paused = res.statusCode === 503 && code === 'GW_OVERLOADED' && /paused by the platform/.test(String(message))
        } catch {
          out.code = null
        }
      } else if (res.statusCode === 200 && r.checked) {
        const want = await expectedBody(r)
        if (!body.equals(want)) out.wrongBody = `${body.length} bytes, not the ${want.length} of the report asked for (${JSON.stringify(body.subarray(0, 60).toString('utf8'))}…)`
      } else if (res.statusCode === 201) {
        try {
          JSON.parse(body.toString('utf8'))
        } catch {
          out.wrongBody = `a 201 that is not JSON (${body.length} bytes)`
        }
      }
      return out
    } catch (err) {
      return { status: null, code: null, lost: err.code ?? err.name, refused: err.code === 'ECONNREFUSED' }
    }
  }

  // The load balancer's part: a replica out of rotation gets nothing new; a request a
  // replica refused because it is down or stopping goes once to another.
  const pick = (i) => {
    const preferred = replicas[i % replicas.length]
    const ready = replicas.filter((r) => !r.out)
    return preferred.out && ready.length > 0 ? ready[i % ready.length] : preferred
  }
  const other = (gw) => replicas.find((r) => r !== gw && !r.out) ?? replicas[(replicas.indexOf(gw) + 1) % replicas.length]
  const idempotent = (r) => r.method === 'GET' || r.path.endsWith('/get')
  // Without an answer: a connection refused, or cut before an answer to a request that may be sent twice.
  const unanswered = (o, r) => o.status === null && (o.refused || idempotent(r))
  const retriable = (o, r) => unanswered(o, r) || (o.status === 503 && o.code === 'GW_SHUTTING_DOWN')
  // What the replicas told to stop answered, by status (--rolling).
  const whileStopping = new Map()

  const send = async (i) => {
    const r = requestFor(i)
    let gw = pick(i)
    const window = ledger.current
    const t0 = performance.now()
    const sentS = (t0 - runStart) / 1000
    const toldToStop = gw.proc.told === 'SIGTERM'
    let outcome = await attempt(gw, r)
    if (toldToStop) {
      const what = outcome.status ?? `lost (${outcome.lost})`
      whileStopping.set(what, (whileStopping.get(what) ?? 0) + 1)
    }
    if ((CHAOS && retriable(outcome, r)) || (ROLLING && unanswered(outcome, r))) {
      gw = other(gw)
      outcome = { ...(await attempt(gw, r)), retried: true }
    }
    const status = outcome.status ?? `lost (${outcome.lost})`
    if (r.kind === 'miss' && status === 200) gw.newReports++
    if ((r.kind === 'hit' || r.kind === 'miss') && outcome.status !== null) {
      const c = `${r.kind}: ${outcome.xCache}`
      xCache.set(c, (xCache.get(c) ?? 0) + 1)
    }
    const latency = typeof status === 'number' ? performance.now() - t0 : null
    overall.add(status, latency)
    interval.add(status, latency)
    const kind = byKind.get(r.kind) ?? new Tally()
    byKind.set(r.kind, kind)
    kind.add(status, latency)
    if (CHAOS) ledger.record(r, sentS, { ...outcome, replica: gw.name }, window)
    else if (!r.expect.includes(status) && unexpected.length < 50) unexpected.push(`${r.kind} on ${gw.name}: ${r.method} ${r.path} -> ${status}`)
  }

  const report = async (final = false) => {
    const t = interval
    interval = new Tally()
    const sorted = t.sorted()
    const memories = await Promise.all(
      replicas.map(async (gw) => {
        // A replica restarting may not have its probe yet: SIGUSR2 would end it.
        if (gw.out || gw.restarting) return null
        const m = await memoryOf(gw.proc)
        if (m) m.newReports = gw.newReports
        return m
      }),
    )
    const redisMemory = Number(/used_memory:(\d+)/.exec(await redisClient.info('memory').catch(() => ''))?.[1] ?? NaN)
    const mem = (m) => (m ? `${mb(m.rss)} / ${mb(m.heapUsed)}` : '—')
    console.log(
      `| ${final ? 'end' : `${Math.round(runSeconds())} s`} | ${t.count()} | ${t.count((s) => s >= 200 && s < 300)} | ${t.count((s) => s >= 400 && s < 429)} | ${t.count((s) => s === 429)} | ${t.count((s) => s >= 500)} | ${t.count((s) => typeof s === 'string')} | ${ms(percentile(sorted, 50))} | ${ms(percentile(sorted, 99))} | ${memories.map((m) => `${mem(m)} | `).join('')}${mb(redisMemory)} | ${loadavg()[0]?.toFixed(1)} |`,
    )
  }

  // ------------------------------------------------------------ faults (--chaos)
  const loadS = TOTAL / RATE
  const random = seededRandom(SEED)
  const faultEnv = {
    redis: redisClient,
    sleep: (msToWait) => sleep(msToWait),
    restartRedis: async () => {
      const proc = infra.redis
      proc.told = 'SIGKILL'
      proc.child.kill('SIGKILL')
      await proc.exited
      const t0 = performance.now()
      await startRedis()
      return `killed, answering again after ${((performance.now() - t0) / 1000).toFixed(1)} s`
    },
    pickReplica: () => replicas[Math.floor(random() * replicas.length)],
    restartReplica: async (slot, signal) => {
      const proc = slot.proc
      slot.out = true
      proc.told = signal
      proc.child.kill(signal)
      const code = await Promise.race([proc.exited, sleep(15_000).then(() => 'no exit within 15 s')])
      if (signal === 'SIGTERM') sigtermExits.push(`${slot.name}: ${code}`)
      if (code === 'no exit within 15 s') proc.child.kill('SIGKILL')
      await proc.exited
      const ready = await startReplica(slot)
      slot.out = false
      return `${slot.name} ${signal === 'SIGTERM' ? `exited ${code}` : 'killed'}; started again, ready after ${ready.toFixed(1)} s`
    },
    platform: {
      kill: async () => {
        const proc = infra.sandbox
        proc.told = 'SIGKILL'
        proc.child.kill('SIGKILL')
        await proc.exited
      },
      start: startPlatform,
      signal: (name) => infra.sandbox.child.kill(name),
      control,
    },
  }

  /** Each replica's governor of the credential, from /admin/status; null when it does not answer. */
  const governorOf = async (gw) => {
    const res = await request(`${gw.adminUrl}/admin/status`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).catch(() => null)
    if (!res || res.statusCode !== 200) {
      await res?.body.dump()
      return null
    }
    const status = await res.body.json()
    return status.governors?.find((g) => g.credential === CREDENTIAL) ?? null
  }

  /** The replicas' governors once a second for the first seconds after a fault: printed when errors outlast it. */
  const watchGovernors = async (w, endS, seconds) => {
    w.governors = []
    for (let k = 0; k < seconds && !stopping; k++) {
      const states = await Promise.all(replicas.map(governorOf))
      const one = (g) => (g ? `limit ${g.limit ?? '?'} knee ${g.knee ?? '?'} (${g.phase ?? '?'}${g.learner ? ', learner' : ''}) in flight ${g.inFlight} queued ${g.queued} seats ${g.seatsHeld ?? '?'}` : 'no answer')
      w.governors.push(`+${Math.round(runSeconds() - endS)} s: ${states.map((g, i) => `${replicas[i].name.slice(-1).toUpperCase()} ${one(g)}`).join(' | ')}`)
      await sleep(1000)
    }
  }

  /** What Redis holds for the seats and the learned limit against what the replicas say, until they agree or a lease and a second have passed. */
  const checkAgreement = async (w, endS) => {
    let last = 'not read'
    while (runSeconds() - endS <= SEAT_LEASE_S + 1) {
      try {
        // The credential's seats hash: the replicas' leases (those not lapsed) and the shared limit.
        const key = `${KEY_PREFIX}seats:{${CREDENTIAL}}`
        const read = async () => {
          const [sec, usec] = await redisClient.time()
          const now = Number(sec) * 1000 + Math.floor(Number(usec) / 1000)
          return liveLeases(await redisClient.hgetall(key), now)
        }
        const live = await read()
        const states = await Promise.all(replicas.map(governorOf))
        const liveAfter = await read()
        last = disagreement({ live, liveAfter, limit: sharedLimit(await redisClient.hget(key, 'limit')) }, states)
        if (last === null) {
          w.agreedAfterS = Math.max(0, runSeconds() - endS)
          return
        }
      } catch (err) {
        last = `not read: ${err.message}`
      }
      await sleep(250)
    }
    w.disagreement = last
  }

  const chaos = async () => {
    const firstS = Math.min(30, Math.max(15, loadS * 0.1))
    const gap = loadS >= LONG_RUN_S ? [20, 40] : [8, 12]
    let order = []
    await sleep(firstS * 1000)
    while (!stopping) {
      if (order.length === 0) order = shuffled(CHOSEN_FAULTS, random)
      const fault = order[0]
      const startS = runSeconds()
      if (startS + fault.expectS + RECOVERY_TARGET_S + SEAT_LEASE_S > loadS) break
      order.shift()
      ledger.open(fault.name, startS)
      const w = ledger.current
      console.log(`[${secs(startS)}] fault ${w.n}: ${fault.name}`)
      try {
        w.detail = await fault.run(faultEnv)
      } catch (err) {
        w.detail = `the fault failed: ${err.message}`
        w.failed = true
      }
      w.endS = runSeconds()
      console.log(`[${secs(w.endS)}] fault ${w.n} over after ${secs(w.endS - startS)}: ${w.detail}`)
      const gapS = gap[0] + random() * (gap[1] - gap[0])
      const agreement = checkAgreement(w, w.endS)
      const governors = watchGovernors(w, w.endS, Math.floor(gapS) - 1)
      await sleep(gapS * 1000)
      await Promise.all([agreement, governors])
    }
  }

  startRun()
  let sampling = Promise.resolve()
  const sampler = setInterval(() => {
    sampling = sampling.then(() => report())
  }, SAMPLE_S * 1000)
  const restartSlot = async (slot) => {
    const proc = slot.proc
    slot.restarting = true
    try {
      proc.told = 'SIGTERM'
      const t0 = performance.now()
      proc.child.kill('SIGTERM')
      const code = await Promise.race([proc.exited, sleep(15_000).then(() => 'no exit within 15 s')])
      sigtermExits.push(`${slot.name}: ${code}`)
      const exitS = (performance.now() - t0) / 1000
      if (code === 'no exit within 15 s') proc.child.kill('SIGKILL')
      await proc.exited
      const ready = await startReplica(slot)
      return `exited ${code} ${exitS.toFixed(1)} s after SIGTERM; started again, ready after ${ready.toFixed(1)} s`
    } catch (err) {
      unexpectedExits.push(`${runSeconds().toFixed(1)} s: ${slot.name} did not start again: ${err.message}`)
      return `did not start again: ${err.message.split('\n')[0]}`
    } finally {
      slot.restarting = false
    }
  }
  const rollingEnv = {
    replicas,
    restart: restartSlot,
    ready: async (slot) => (await request(`${slot.adminUrl}/readyz`, { headersTimeout: 1000, bodyTimeout: 1000 }).then(async (res) => (await res.body.dump(), res.statusCode))) === 200,
    sleep: (msToWait) => sleep(msToWait),
    stopping: () => stopping,
    leftMs: () => (TOTAL / RATE - runSeconds()) * 1000,
    now: () => runSeconds(),
    log: (line) => console.log(`[${secs(runSeconds())}] ${line}`),
  }
  const rolling = ROLLING ? Promise.all([rollingRestarts(rollingEnv), watchReadiness(rollingEnv)]).then(([rounds]) => rounds) : Promise.resolve([])
  const faults = CHAOS ? chaos() : Promise.resolve()
  for (let i = 0; i < TOTAL && performance.now() - started < HARD_LIMIT_MS; i++) {
    const wait = runStart + (i * 1000) / RATE - performance.now()
    if (wait > 0) await sleep(wait)
    while (inFlight >= MAX_IN_FLIGHT) await sleep(5)
    inFlight++
    sent++
    void send(i).finally(() => inFlight--)
  }
  const loadEndS = runSeconds()
  while (inFlight > 0) await sleep(20)
  stopping = true
  await faults
  const rounds = await rolling
  clearInterval(sampler)
  await sampling
  if (interval.count() > 0) await report(true)
  await agent.close()

  // ------------------------------------------------------------ summary
  const all = overall.sorted()
  const lost = overall.count((s) => typeof s === 'string')
  const fiveXX = overall.count((s) => typeof s === 'number' && s >= 500)
  console.log('')
  console.log(`requests: ${sent} in ${((performance.now() - runStart) / 1000).toFixed(0)} s; p50 ${ms(percentile(all, 50))}, p99 ${ms(percentile(all, 99))}, max ${ms(all[all.length - 1] ?? NaN)}; 5xx ${fiveXX}; lost ${lost}`)
  for (const [kind, t] of [...byKind].sort()) {
    const statuses = [...t.statuses].sort().map(([s, c]) => `${s}: ${c}`).join(', ')
    console.log(`  ${kind.padEnd(30)} ${statuses}   p50 ${ms(percentile(t.sorted(), 50))}, p99 ${ms(percentile(t.sorted(), 99))}`)
  }
  console.log(`  x-cache: ${[...xCache].sort().map(([k, c]) => `${k} ${c}`).join(', ')}`)
  if (ROLLING) {
    const restarts = rounds.flat().length
    console.log(`  rolling restarts: ${rounds.length} rounds, ${restarts} replicas restarted with SIGTERM (exits ${sigtermExits.map((e) => e.split(': ')[1]).join(', ') || 'none'}); answered by a replica told to stop: ${[...whileStopping].sort().map(([k, c]) => `${k}: ${c}`).join(', ') || 'none'}; answers lost or 5xx in the whole run: ${lost + fiveXX}`)
  }
  for (const gw of replicas) {
    const m = gw.proc.memory
    if (m.length < 2) continue
    const first = m[0]
    const last = m[m.length - 1]
    const peak = Math.max(...m.map((x) => x.heapUsed))
    // Misses add reports to the replica's caches (bounded by size: cache.l1MaxBytes and the
    // memo of known URLs), so the heap grows with them until those bounds are reached.
    const added = last.newReports - first.newReports
    const perReport = added > 0 ? ((last.heapUsed - first.heapUsed) / added / 1024).toFixed(1) : '—'
    console.log(
      `  ${gw.name}: heap after GC ${mb(first.heapUsed)} MB at the first sample, ${mb(last.heapUsed)} MB at the end (peak ${mb(peak)}), ${perReport} KB per report it cached in between (${added}); external ${mb(first.external)} -> ${mb(last.external)} MB; V8 heap reserved (heapTotal) ${mb(first.heapTotal ?? 0)} -> ${mb(last.heapTotal ?? 0)} MB; RSS ${mb(first.rss)} -> ${mb(last.rss)} MB`,
    )
  }

  const missed = CHAOS ? chaosVerdict({ ledger, loadEndS, replicas, unexpectedExits, sigtermExits }) : []
  // Every answer the verdict judged, one JSON line each, kept with the logs (--keep-logs).
  if (CHAOS) writeFileSync(join(tmp, 'answers.log'), ledger.answers.map((a) => JSON.stringify(a)).join('\n') + '\n')

  redisClient.disconnect()
  await pristine?.close()
  stopping = true
  const exits = []
  for (const gw of replicas) {
    gw.proc.told = 'SIGTERM'
    gw.proc.child.kill('SIGTERM')
    const code = await Promise.race([gw.proc.exited, sleep(15_000).then(() => 'no exit within 15 s')])
    exits.push(`${gw.name}: ${code}`)
    if (code !== 0) unexpected.push(`${gw.name} did not exit 0 on SIGTERM (${code}):\n${tail(gw.proc)}`)
  }
  console.log(`  shutdown (SIGTERM): ${exits.join(', ')}`)
  if (CHAOS) logSummary(replicas)
  keepLogs()
  await stopAll()

  if (CHAOS) {
    if (missed.length > 0 || unexpected.length > 0) {
      for (const u of unexpected) console.log(`  ${u}`)
      // Again at the end, where a CI log's tail shows it.
      console.log(`\nFAILED: a chaos target was missed (seed ${SEED}):`)
      for (const text of missed) console.log(`  ${text}`)
      return 1
    }
    console.log('\nOK: every chaos target met')
    return 0
  }
  for (const e of sigtermExits) if (!e.endsWith(': 0')) unexpected.push(`${e}: no exit 0 after SIGTERM`)
  for (const e of unexpectedExits) unexpected.push(e)
  if (unexpected.length > 0 || lost > 0 || fiveXX > 0) {
    console.log(`\nFAILED: ${overall.count((s) => typeof s === 'string' || s >= 500)} lost or 5xx; unexpected answers (first ${unexpected.length}):`)
    for (const u of unexpected) console.log(`  ${u}`)
    return 1
  }
  console.log('\nOK: every request answered as expected; no 5xx, none lost')
  return 0
}

main().then(
  (code) => {
    process.exitCode = code
  },
  async (err) => {
    console.error(`soak: ${err.stack ?? err}`)
    keepLogs()
    await stopAll()
    // Open clients (Redis retrying) would keep the process alive.
    process.exit(1)
  },
)
