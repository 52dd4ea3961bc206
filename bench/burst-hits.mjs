// Where the slow popular answers of a dashboard-family replay waited: beside the gateway's
// collections and its event loop's late ticks (its own work on its core, or waiting for the
// core: other processes), and the load generator's late ticks, as bench/lib/loop-watch.mjs
// wrote them during the replay.
//
//   BENCH_GATEWAY_NODE_FLAGS="--import ./bench/lib/loop-watch.mjs" flock /tmp/bench.lock \
//     npx node --import ./bench/lib/loop-watch.mjs bench/run.mjs --only=dashboard-family --traces=2
//   npx node bench/burst-hits.mjs .bench/calls-family2-gateway.json [watch dir, default .bench/loop-watch]
//
// The gateway's file is the one whose process ran dist/main.js over the replay's measured
// time; the burst is its middle third, as bench/scenarios/dashboard-family.mjs makes it.

import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'

const SLOW_MS = 20
const [asksPath, dir = '.bench/loop-watch'] = process.argv.slice(2)
if (!asksPath) throw new Error('usage: node bench/burst-hits.mjs <.bench/calls-familyN-TARGET.json> [watch dir]')
const { fromMs, ttlMs, calls, asks } = JSON.parse(readFileSync(asksPath, 'utf8'))
const measured = asks.filter((a) => a.at >= fromMs)
const toMs = measured.at(-1).at
const burst = [fromMs + (toMs - fromMs) / 3, fromMs + (2 * (toMs - fromMs)) / 3]

const watches = readdirSync(dir).filter((f) => f.endsWith('.jsonl')).map((f) => readFileSync(join(dir, f), 'utf8').trim().split('\n').map((l) => JSON.parse(l)))
const over = (lines) => lines[0].at <= fromMs && lines.at(-1).at >= toMs
const gateway = watches.find((w) => w[0].script.endsWith('dist/main.js') && over(w))
const generator = watches.find((w) => w[0].script.endsWith('bench/run.mjs') && over(w))
if (!gateway || !generator) throw new Error(`no watch of the gateway and the load generator over ${asksPath}'s measured time in ${dir}`)

const of = (lines, t) => lines.filter((x) => x.t === t)
const within = (xs, [from, to]) => xs.filter((x) => x.at >= from && x.at < to)
const sum = (xs, k = 'ms') => xs.reduce((s, x) => s + x[k], 0)
const overlap = (from, to, x) => Math.max(0, Math.min(to, x.at + x.ms) - Math.max(from, x.at))
const fmt = (ms) => `${ms.toFixed(ms < 10 ? 1 : 0)} ms`

const gc = of(gateway, 'gc'), late = of(gateway, 'late'), genLate = of(generator, 'late')
const burstS = (burst[1] - burst[0]) / 1000
const g = within(gc, burst), l = within(late, burst), gl = within(genLate, burst)
const pauses = g.map((x) => x.ms).sort((a, b) => a - b)
console.log(`${asksPath}: the burst's ${burstS.toFixed(1)} s`)
console.log(`- the gateway's collections: ${g.length} (${g.filter((x) => x.kind === 1).length} scavenges), pause median ${fmt(pauses[pauses.length >> 1] ?? 0)}, max ${fmt(pauses.at(-1) ?? 0)}, ${fmt(sum(g))} in all`)
console.log(`- the gateway's loop late over 8 ms: ${l.length} times, ${fmt(sum(l))} in all (max ${fmt(Math.max(0, ...l.map((x) => x.ms)))}); over those ticks its main thread ran ${fmt(sum(l, 'run'))} and waited for its core ${fmt(sum(l, 'wait'))}`)
console.log(`- the load generator's loop late over 8 ms: ${gl.length} times, ${fmt(sum(gl))} in all (max ${fmt(Math.max(0, ...gl.map((x) => x.ms)))}); ran ${fmt(sum(gl, 'run'))}, waited for its core ${fmt(sum(gl, 'wait'))}`)

const threads = within(of(gateway, 'threads'), burst)
const byName = {}
for (const x of threads) for (const [name, ms] of Object.entries(x.ran)) byName[name] = (byName[name] ?? 0) + ms
console.log(`- the gateway's threads on its core over ${threads.length} s of the burst: ${Object.entries(byName).filter(([, ms]) => ms >= 1).map(([name, ms]) => `${name} ${fmt(ms)}`).join(', ')}`)

// Each slow answer's time split by what held a loop then: a late tick's overlap shared
// between its thread's running and waiting in their proportion over the tick.
const split = (from, to, ticks) => ticks.reduce((s, x) => {
  const o = overlap(from, to, x)
  const share = x.run + x.wait > 0 ? o / (x.run + x.wait) : 0
  return { held: s.held + o, run: s.run + x.run * share, wait: s.wait + x.wait * share }
}, { held: 0, run: 0, wait: 0 })
const slow = measured.filter((a) => a.popular && a.ms > SLOW_MS)
const total = { ms: 0, gc: 0, run: 0, wait: 0, gen: 0, neither: 0 }
for (const a of slow) {
  const [from, to] = [a.at, a.at + a.ms]
  const gw = split(from, to, late)
  const gen = split(from, to, genLate)
  total.ms += a.ms
  total.gc += gc.reduce((s, x) => s + overlap(from, to, x), 0)
  total.run += gw.run
  total.wait += gw.wait
  total.gen += gen.held
  if (gw.held < 5 && gen.held < 5) total.neither++
}
const pct = (ms) => `${((100 * ms) / Math.max(1, total.ms)).toFixed(0)} %`
console.log(`- popular answers over ${SLOW_MS} ms: ${slow.length} (${within(slow, burst).length} in the burst), ${fmt(total.ms)} in all; of it the gateway's loop held by its own work ${fmt(total.run)} (${pct(total.run)}; its collections' pauses ${fmt(total.gc)}, ${pct(total.gc)}), by waiting for its core ${fmt(total.wait)} (${pct(total.wait)}); the load generator's loop late ${fmt(total.gen)} (${pct(total.gen)}); neither loop late by 5 ms or more: ${total.neither}`)

// Two other ways a popular answer could wait in the burst, counted from the same record.
// A popular copy gone (a MISS or EXPIRED in the burst: its caller waits for the platform).
const popularBy = (xs) => {
  const by = {}
  for (const a of xs) (by[a.cache] ??= []).push(a.ms)
  return Object.entries(by).map(([cache, ms]) => {
    ms.sort((x, y) => x - y)
    return `${cache} ${ms.length} (p99 ${fmt(ms[Math.min(ms.length - 1, Math.floor(ms.length * 0.99))])}, over ${SLOW_MS} ms ${ms.filter((m) => m > SLOW_MS).length})`
  }).join(', ')
}
const popularAsks = measured.filter((a) => a.popular)
const inBurst = within(popularAsks, burst)
console.log(`- popular answers by x-cache, in the burst: ${popularBy(inBurst)}; outside it: ${popularBy(popularAsks.filter((a) => !inBurst.includes(a)))}`)
// A popular report's refresh ahead held back (a seat, the loop): the age of the copy it
// replaced as the call reached the stand-in, in the burst and outside, and how many
// reached it past the copy's freshness.
// The gateway sends a report's parameters sorted; the asks carry them in the trace's order.
const sorted = (path) => {
  const [route, query = ''] = path.split('?')
  return `${route}?${query.split('&').sort().join('&')}`
}
const popularPaths = new Set(popularAsks.map((a) => sorted(a.path)))
const before = new Map()
const ahead = []
for (const c of [...calls].sort((x, y) => x.at - y.at)) {
  const prev = before.get(c.path)
  before.set(c.path, c)
  if (c.at >= fromMs && popularPaths.has(sorted(c.path)) && c.requestId?.startsWith('refresh-ahead-') && prev?.answeredAt != null) ahead.push({ at: c.at, age: c.at - prev.answeredAt })
}
const ages = (xs) => {
  const s = xs.map((x) => x.age).sort((x, y) => x - y)
  return s.length ? `${s.length}, the copy ${fmt(s[0])} to ${fmt(s.at(-1))} old (median ${fmt(s[s.length >> 1])}), ${s.filter((x) => x > ttlMs).length} past its freshness` : 'none'
}
const aheadIn = within(ahead, burst)
console.log(`- the popular reports' refreshes ahead at the stand-in, in the burst: ${ages(aheadIn)}; outside it: ${ages(ahead.filter((x) => !aheadIn.includes(x)))}`)
