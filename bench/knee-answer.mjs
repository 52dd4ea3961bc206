// `node bench/knee-answer.mjs` (after `npm run build`; run it under the bench lock): in one
// process, no I/O, the CPU time per answer the limit rule learns from
// (platform/governor/knee-estimator.ts, KneeEstimator.ended over every guess of W up to
// maxConcurrent 64): 32 calls in flight, answers in order 5 to 15 ms apart, two kinds,
// a tick every 20 answers; alone, and with 16 calls of other replicas ahead. Median of 5
// rounds of 50,000 answers. KNEE_MODULE=<path> measures another build of the module.
const { KneeEstimator } = await import(process.env.KNEE_MODULE ?? '../dist/platform/governor/knee-estimator.js')
const cpu = () => process.cpuUsage().user

function round(remote, answers) {
  const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
  let t = 1_800_000_000_000
  let seed = 1
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647
  const load = 32 + remote
  const flight = Array.from({ length: 32 }, () => ({ window: rule.started('a', load), at: t, kind: 'a' }))
  const from = cpu()
  for (let i = 0; i < answers; i++) {
    t += 5 + 10 * random()
    const c = flight.shift()
    rule.ended({ startedAt: c.at, at: t, team: 'bench', kind: c.kind, load, window: c.window, outcome: 'ok' })
    const kind = random() < 0.8 ? 'a' : 'b'
    flight.push({ window: rule.started(kind, load), at: t, kind })
    if (i % 20 === 0) rule.tick(t, null)
  }
  return ((cpu() - from) * 1000) / answers
}

for (const [name, remote] of [['alone', 0], ['16 calls of other replicas ahead', 16]]) {
  round(remote, 20_000)
  const ns = Array.from({ length: 5 }, () => round(remote, 50_000)).sort((a, b) => a - b)
  console.log(`${name}: ${Math.round(ns[2])} ns per answer (rounds ${ns.map(Math.round).join(', ')})`)
}
