// What the gateway asks of Redis, counted by Redis itself (INFO commandstats, reset with
// CONFIG RESETSTAT before each step): three replicas (`node dist/main.js`, GATEWAY_SECRET
// set) on one redis-server, twenty teams (ten with a rate limit), the sandbox's 4 KB report.
//   - idle: once every team asked on every replica, nothing more is asked: the commands and
//     bytes each replica still sends per second (announcements, syncs, the learned limit);
//   - per request kind: a burst of requests of one kind at a steady rate, and what Redis
//     counted during the burst and the syncs after it, per request (the idle replicas'
//     commands over the same time included: their rate is the first row);
//   - the cluster view: one GET /admin/cluster (three replicas) in commands and bytes.
// A Lua script's own commands are counted by Redis under their names, besides EVALSHA.

import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { REPORT_PATH, startMainGateway } from '../lib/fixture.mjs'
import { http } from '../lib/http.mjs'
import { loadAverage } from '../lib/machine.mjs'
import { log, stopProcess } from '../lib/processes.mjs'
import { markdownTable } from '../lib/stats.mjs'

export const id = 'redis-traffic'
export const title = 'Redis commands per idle replica and per request kind (INFO commandstats)'

const REPLICAS = 3
const TEAMS = 20
const LIMITED = 10
// The usage flush (5 s) and the rate-limit sync (500 ms) of a burst fall within this wait.
const SETTLE_MS = 6000

/** Redis's counts by command and its bytes in and out since the last RESETSTAT. */
async function redisCounts(redis) {
  const calls = {}
  for (const line of (await redis.info('commandstats')).split('\r\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line)
    if (m) calls[m[1]] = Number(m[2])
  }
  const stats = await redis.info('stats')
  const num = (name) => Number(new RegExp(`${name}:(\\d+)`).exec(stats)?.[1] ?? 0)
  return { calls, bytesIn: num('total_net_input_bytes'), bytesOut: num('total_net_output_bytes') }
}

/** What Redis counted while `fn` ran (and `settleMs` after it), with its duration in seconds; the bench's own commands left out. */
async function counted(redis, fn, settleMs = 0) {
  await redis.config('RESETSTAT')
  const t0 = performance.now()
  await fn()
  if (settleMs > 0) await sleep(settleMs)
  const seconds = (performance.now() - t0) / 1000
  const c = await redisCounts(redis)
  // This process's CONFIG and INFO calls are no gateway's.
  for (const own of ['config|resetstat', 'info']) delete c.calls[own]
  return { ...c, seconds }
}

const total = (calls) => Object.values(calls).reduce((a, b) => a + b, 0)
const byCommand = (calls, per) =>
  Object.entries(calls)
    .filter(([, n]) => n / per >= 0.005)
    .sort((a, b) => b[1] - a[1])
    .map(([name, n]) => `${name} ${(n / per).toFixed(2)}`)
    .join(', ') || 'none'

/** Runs the scenario; resolves with its Markdown section. */
export async function run({ fixture, quick }) {
  if (!fixture.redisUrl) return 'Skipped: no redis-server.\n'
  const IDLE_S = quick ? 10 : 30
  const BURST = quick ? 300 : 1000
  const MISSES = quick ? 40 : 150
  const redis = new Redis(fixture.redisUrl, { lazyConnect: true })
  await redis.connect()
  const own = []
  try {
    const { hashApiKey } = await import('../../dist/access/api-keys.js')
    const keys = Array.from({ length: TEAMS }, () => `rgw_${randomBytes(32).toString('base64url')}`)
    const teams = Object.fromEntries(
      keys.map((key, i) => [`team-${String(i + 1).padStart(2, '0')}`, { keys: [hashApiKey(key)], advertisers: ['*'], ...(i >= TEAMS - LIMITED ? { rateLimit: { max: 1_000_000_000, window: '24h' } } : {}) }]),
    )
    const base = { platformUrl: fixture.sandbox.url, platformToken: fixture.sandbox.token, redisUrl: fixture.redisUrl, env: { ADMIN_TOKEN: fixture.adminToken } }
    const prefix = `rgwtraffic-${randomBytes(3).toString('hex')}:`
    const replicas = []
    for (let i = 0; i < REPLICAS; i += 1) replicas.push(own[own.push(await startMainGateway(`traffic-${i + 1}`, { ...base, config: { teams, redis: { keyPrefix: prefix } } })) - 1])
    const l2Only = own[own.push(await startMainGateway('traffic-l2', { ...base, config: { teams, redis: { keyPrefix: prefix }, cache: { l1MaxBytes: 0 } } })) - 1]
    const [a] = replicas
    const ask = async (gw, key, path = REPORT_PATH) => {
      const r = await http('GET', `${gw.url}${path}`, { headers: { 'x-api-key': key } })
      if (r.status !== 200) throw new Error(`${gw.name}: ${r.status} ${r.body.toString('utf8').slice(0, 200)}`)
      return r.headers['x-cache']
    }
    // Every team on every replica: each has a rate-limit window and usage of every team.
    for (const gw of [...replicas, l2Only]) for (const key of keys) await ask(gw, key)
    await sleep(SETTLE_MS)

    const idle = await counted(redis, () => sleep(IDLE_S * 1000))
    const gateways = REPLICAS + 1
    const perReplicaSecond = idle.seconds * gateways
    log(`redis-traffic: idle ${(total(idle.calls) / perReplicaSecond).toFixed(2)} commands/s per replica`)

    /** A burst of `n` requests (`next(i)` sends the i-th), paced over `seconds`: what Redis counted, per request. */
    const burst = async (n, seconds, next) => {
      const c = await counted(
        redis,
        async () => {
          const t0 = performance.now()
          for (let i = 0; i < n; i += 1) {
            const wait = t0 + (i * seconds * 1000) / n - performance.now()
            if (wait > 0) await sleep(wait)
            await next(i)
          }
        },
        SETTLE_MS,
      )
      return { net: c.calls, n, rate: n / seconds, seconds: c.seconds }
    }
    const plainKey = keys[0]
    const limitedKey = keys[TEAMS - 1]
    const l1 = await burst(BURST, 4, () => ask(a, plainKey))
    const l1Limited = await burst(BURST, 4, () => ask(a, limitedKey))
    const l1Teams = await burst(BURST, 4, (i) => ask(a, keys[i % TEAMS]))
    const l2 = await burst(BURST / 4, 2, () => ask(l2Only, plainKey))
    let day = 0
    const misses = await burst(MISSES, 6, async () => {
      const from = new Date(Date.UTC(2024, 0, 1) + day++ * 86_400_000).toISOString().slice(0, 10)
      const cache = await ask(a, plainKey, `/api/v1/report/campaigns/get?advertiserId=101&byDate=1&dateFrom=${from}&dateTo=${from}`)
      if (cache !== 'MISS') throw new Error(`a miss answered ${cache}`)
    })
    const view = await counted(redis, async () => {
      for (let i = 0; i < 10; i += 1) {
        const r = await http('GET', `${a.admin}/admin/cluster`, { headers: { authorization: `Bearer ${fixture.adminToken}` } })
        if (r.status !== 200) throw new Error(`GET /admin/cluster: ${r.status}`)
      }
    })
    const kinds = [
      ['L1 hit, a team without a rate limit', l1],
      ['L1 hit, a rate-limited team', l1Limited],
      [`L1 hits spread over ${TEAMS} teams (${LIMITED} rate-limited)`, l1Teams],
      ['L2 hit (a replica with cache.l1MaxBytes 0)', l2],
      ['miss (one platform call, stored)', misses],
    ]
    return [
      `${REPLICAS} replicas and one with L1 off, ${TEAMS} teams (${LIMITED} with a rate limit of a 24-hour window), each team asked once on each replica first; a burst's row counts its ${SETTLE_MS / 1000} s of syncs after it and the ${gateways} idle replicas' commands over its time (the first row's rate); load average ${loadAverage()}.`,
      '',
      markdownTable(
        ['what', 'commands', 'by command'],
        [
          [`idle replica, per second (${IDLE_S} s after every team asked)`, (total(idle.calls) / perReplicaSecond).toFixed(2), byCommand(idle.calls, perReplicaSecond)],
          ['idle replica, bytes sent to Redis per second', Math.round(idle.bytesIn / perReplicaSecond).toLocaleString('en-US'), ''],
          ...kinds.map(([what, b]) => [`${what}: ${b.n} at ${b.rate} req/s, per request`, (total(b.net) / b.n).toFixed(2), byCommand(b.net, b.n)]),
          [`GET /admin/cluster with ${gateways} replicas, per call`, (total(view.calls) / 10).toFixed(1), `${byCommand(view.calls, 10)}; ${Math.round(view.bytesOut / 10).toLocaleString('en-US')} bytes read from Redis, ${Math.round(view.bytesIn / 10).toLocaleString('en-US')} written`],
        ],
      ),
      '',
    ].join('\n')
  } finally {
    redis.disconnect()
    await Promise.all(own.map((p) => stopProcess(p)))
  }
}
