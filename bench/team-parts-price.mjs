// `node bench/team-parts-price.mjs` (after `npm run build`; run it under the bench lock): in
// one process, no I/O, what a team's even part costs where it is on a path, beside the one
// LRU it replaced (main before 2026-12-02):
// - the watches of refresh ahead (cache/team-parts-lru.ts against lru-cache, as
//   report-cache.ts had them): a fresh read's `get` of its watch (20,000 watches over four
//   teams, 2,000,000 gets), and a new watch set into full watches (200,000 sets);
// - the governor's kinds (work-estimates.ts `take`): a kind seen again (2,000,000), and a new
//   kind taken into MAX_KINDS full ones (200,000, one team flooding beside three);
// - the latencies of work classes (report-cache.ts, LATENCY_CLASSES: reports/class-latencies.ts,
//   each team's own in its part and any team's): a platform answer's class learned again
//   (400,000, 512 classes held), and a new class learned into full ones (400,000, one team
//   flooding beside three).
// Median of 5 rounds, ns an operation.
import { LRUCache } from 'lru-cache'
const { TeamPartsLru } = await import('../dist/cache/team-parts-lru.js')
const { take, MAX_KINDS } = await import('../dist/platform/governor/work-estimates.js')
const { LATENCY_CLASSES } = await import('../dist/reports/report-cache.js')
const { learnLatency } = await import('../dist/reports/refresh-ahead.js')
const { ClassLatencies } = await import('../dist/reports/class-latencies.js')

const TEAMS = ['a', 'b', 'c', 'd']
const WATCHES = 20_000
const SIZE = 800
const median = (xs) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)]
function timed(n, f) {
  const t = process.hrtime.bigint()
  f()
  return Number(process.hrtime.bigint() - t) / n
}
const watch = () => ({ asks: 1, timer: null })

function lruWatches() {
  const w = new LRUCache({ maxSize: WATCHES * SIZE, sizeCalculation: () => SIZE, dispose: () => {} })
  return { set: (k, v) => w.set(k, v), get: (k) => w.get(k) }
}
function partedWatches() {
  const w = new TeamPartsLru({ maxBytes: WATCHES * SIZE, teams: () => TEAMS.length, configured: () => true, size: () => SIZE, dispose: () => {} })
  return { set: (k, v, team) => w.set(k, v, team), get: (k) => w.get(k) }
}
function takeMain(map, k, make) {
  const e = map.get(k) ?? make()
  map.delete(k)
  if (map.size >= MAX_KINDS) map.delete(map.keys().next().value)
  map.set(k, e)
  return e
}

function watchRound(make) {
  const w = make()
  for (let i = 0; i < WATCHES; i++) w.set(`k${i}`, watch(), TEAMS[i % 4])
  let sink = 0
  const get = timed(2_000_000, () => { for (let i = 0; i < 2_000_000; i++) sink += w.get(`k${(i * 7919) % WATCHES}`).asks })
  const set = timed(200_000, () => { for (let i = 0; i < 200_000; i++) w.set(`n${i}`, watch(), 'a') })
  return { get, set, sink }
}
function kindRound(t) {
  const map = new Map()
  for (let i = 0; i < MAX_KINDS; i++) t(map, `${TEAMS[i % 4]}\nw${i}`, () => ({}))
  const again = timed(2_000_000, () => { for (let i = 0; i < 2_000_000; i++) t(map, `${TEAMS[(i * 13) % MAX_KINDS % 4]}\nw${(i * 13) % MAX_KINDS}`, () => ({})) })
  const fresh = timed(200_000, () => { for (let i = 0; i < 200_000; i++) t(map, `a\nn${i}`, () => ({})) })
  return { again, fresh }
}

function lruClasses() {
  const c = new LRUCache({ max: LATENCY_CLASSES })
  return (work, ms) => c.set(work, learnLatency(c.get(work), ms))
}
function partedClasses() {
  const c = new ClassLatencies({ max: LATENCY_CLASSES, teams: () => TEAMS.length, configured: () => true })
  return (work, ms, team) => c.learn(work, team, ms)
}
function classRound(make) {
  const learn = make()
  for (let i = 0; i < LATENCY_CLASSES; i++) learn(`w${i}`, 100, TEAMS[i % 4])
  const again = timed(400_000, () => { for (let i = 0; i < 400_000; i++) learn(`w${(i * 13) % LATENCY_CLASSES}`, 100, TEAMS[((i * 13) % LATENCY_CLASSES) % 4]) })
  const fresh = timed(400_000, () => { for (let i = 0; i < 400_000; i++) learn(`n${i}`, 100, 'a') })
  return { again, fresh }
}

const rows = {}
for (const [name, f] of [['classes lru-cache (main)', () => classRound(lruClasses)], ['classes ClassLatencies', () => classRound(partedClasses)], ['watches lru-cache (main)', () => watchRound(lruWatches)], ['watches TeamPartsLru', () => watchRound(partedWatches)], ['kinds take (main)', () => kindRound(takeMain)], ['kinds take (parts)', () => kindRound(take)]]) {
  const rounds = Array.from({ length: 5 }, f)
  rows[name] = Object.fromEntries(Object.keys(rounds[0]).filter((k) => k !== 'sink').map((k) => [k, Math.round(median(rounds.map((r) => r[k])))]))
}
console.log(JSON.stringify(rows, null, 1))
