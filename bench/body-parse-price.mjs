// The price of checking a JSON body and writing it again for the platform
// (src/access/request-body.ts parseJsonBody), on 1 MiB bodies of many values (the shapes a
// black-box pass used to hold the event loop: numbers, halves, empty objects), one with a
// number written otherwise than JSON writes it (1.0, read from its source: bounded to
// SOURCE_VALUES values), and a small body of a few fields; and the body room's take and give
// a chunk (src/access/body-room.ts). Medians of 7 runs (2,001 for the small body and the room).
// Run after `npm run build:gateway`:
//   flock /tmp/bench.lock node bench/body-parse-price.mjs
import { performance } from 'node:perf_hooks'
import { parseJsonBody, SOURCE_VALUES } from '../dist/access/request-body.js'
import { BodyRoom } from '../dist/access/body-room.js'
import { ByteBudget } from '../dist/platform/client/answer-budget.js'

const LIMITS = { jsonDepth: 32, params: 256 }
const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const list = (n, item) => Buffer.from(`{"userId":101,"x":[${Array(n).fill(item).join(',')}]}`)

function ms(body, runs) {
  const times = []
  for (let i = 0; i < runs; i++) {
    const started = performance.now()
    parseJsonBody(body, LIMITS)
    times.push(performance.now() - started)
  }
  return median(times)
}

const shapes = [
  ['520,000 integers (1 MiB)', list(520_000, '0'), 7],
  ['260,000 halves (1 MiB)', list(260_000, '0.5'), 7],
  ['340,000 empty objects (1 MiB)', list(340_000, '{}'), 7],
  ['one integer of 1,040,000 digits (1 MiB)', Buffer.from(`{"userId":101,"n":${'9'.repeat(1_040_000)}}`), 7],
  [`${SOURCE_VALUES - 10} values, one written 1.0`, Buffer.from(`{"userId":101,"x":[1.0,${Array(SOURCE_VALUES - 10).fill('0').join(',')}]}`), 7],
  ['a small body (5 fields)', Buffer.from('{"userId":101,"campaignIds":[1,2,3],"name":"x","budget":1.5}'), 2001],
]
for (const [name, body, runs] of shapes) console.log(`${name}: ${body.length} bytes, ${ms(body, runs).toFixed(3)} ms`)

const room = new BodyRoom(new ByteBudget(128 * 1024 * 1024))
const times = []
for (let i = 0; i < 2001; i++) {
  const started = process.hrtime.bigint()
  for (let j = 0; j < 1000; j++) {
    const hold = room.hold('team')
    hold.grow(65536)
    hold.release()
  }
  times.push(Number(process.hrtime.bigint() - started) / 1000)
}
console.log(`a body's hold, one chunk taken and given back: ${(median(times) / 1000).toFixed(3)} µs`)
