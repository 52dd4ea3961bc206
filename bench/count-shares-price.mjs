// The price of sharing out the platform's count of the token's calls
// (src/platform/pauses/count-shares.ts): one admit and one answer told per platform call,
// with 3 and 30 teams asking, where the platform writes a count it never enforced, and where
// it did (the rule acts); a call past nothing, each team within its share. Median of 5 runs
// of 200,000 calls, in ns a call. Run after `npm run build:gateway`:
//   flock /tmp/bench.lock node bench/count-shares-price.mjs
import { CountShares } from '../dist/platform/pauses/count-shares.js'

let now = 1_800_000_000_000
const clock = { now: () => now }
const LIMIT = 1_000_000

function run(enforced, teams, n) {
  const shares = new CountShares({ weightOf: () => 1, clock })
  shares.told(shares.pass(), enforced ? 429 : 200, { limit: LIMIT, remaining: enforced ? 0 : LIMIT - 1, refusal: enforced }, null)
  let left = LIMIT
  const started = process.hrtime.bigint()
  for (let i = 0; i < n; i++) {
    // A million calls a minute: the window holds every call of a run.
    now += 0.06
    const a = shares.admit(`team${i % teams}`)
    if (a.kind === 'sent') shares.told(a, 200, { limit: LIMIT, remaining: Math.max(0, --left), refusal: false }, null)
  }
  return Number(process.hrtime.bigint() - started) / n
}

const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]
for (const teams of [3, 30]) {
  const written = median(Array.from({ length: 5 }, () => run(false, teams, 200_000)))
  const enforced = median(Array.from({ length: 5 }, () => run(true, teams, 200_000)))
  console.log(`${teams} teams: ${written.toFixed(0)} ns a call where the count is only written, ${enforced.toFixed(0)} ns where it is shared out`)
}
