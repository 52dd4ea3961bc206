// `node bench/seat-end-price.mjs --builds=main=<dist>,branch=dist [--limit=64] [--answers=100000] [--rounds=5]`
// (after `npm run build`; run it under the bench lock): in one process, no I/O, what the
// governor spends on a platform answer of one credential whose seats are all in use with
// calls waiting: the answer's seat ends (`Seat.end`), the next call waiting gets the seat
// (`#dispatch`), and a new call asks (`ask`). Builds side by side in each round, alternating
// which goes first; median of the rounds, ns an answer. The clock moves 1 ms an answer, on
// timers that never fire (the seats' waits, lingers and wakes are set and cleared as they
// are, never run).
const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '')).map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]))
const builds = (args.builds ?? 'branch=dist').split(',').map((b) => [b.slice(0, b.indexOf('=')), b.slice(b.indexOf('=') + 1)])
const limit = Number(args.limit ?? 64)
const answers = Number(args.answers ?? 100_000)
const rounds = Number(args.rounds ?? 5)

const timer = { unref: () => timer }
function clock() {
  return { t: 1_800_000_000_000, now() { return this.t }, setTimeout: () => timer, clearTimeout() {}, setInterval: () => timer, clearInterval() {} }
}

async function load(dir) {
  const root = new URL(`../${dir}/platform/governor/`, import.meta.url)
  const [{ CredentialSeats }, { WorkEstimates }] = await Promise.all([import(new URL('seats.js', root)), import(new URL('work-estimates.js', root))])
  return { CredentialSeats, WorkEstimates }
}

async function run({ CredentialSeats, WorkEstimates }) {
  const c = clock()
  const work = new WorkEstimates()
  work.answered('a', 'week', 100)
  work.answered('b', 'month', 400)
  const s = new CredentialSeats({ credential: 'c', maxConcurrent: limit, limit, queueLimit: 10 * limit, queueTimeoutMs: 1e12, maxPauseMs: 60_000, work, clock: c })
  const held = []
  const ask = (i) => void s.ask({ team: i % 2 ? 'a' : 'b', workClass: i % 2 ? 'week' : 'month', deadline: Infinity }).then((seat) => held.push(seat))
  for (let i = 0; i < limit + 8; i++) ask(i)
  await null
  const t = process.hrtime.bigint()
  for (let i = 0; i < answers; i++) {
    c.t += 1
    held.shift().end({ kind: 'answer', status: 200, latencyMs: 50 })
    ask(i)
    await null
  }
  return Number(process.hrtime.bigint() - t) / answers
}

const loaded = await Promise.all(builds.map(async ([name, dir]) => [name, await load(dir)]))
const times = new Map(loaded.map(([name]) => [name, []]))
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? loaded : [...loaded].reverse()
  for (const [name, build] of order) times.get(name).push(await run(build))
}
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]
for (const [name, xs] of times) console.log(`${name}: ${median(xs).toFixed(0)} ns an answer (rounds ${xs.map((x) => x.toFixed(0)).join(', ')})`)
