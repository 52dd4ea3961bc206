#!/usr/bin/env node
// The price of looking past a team's backlog of webhook deliveries (src/jobs/webhook-deliveries.ts,
// LOOK_PAST): with one team's receiver never answering and `n` of its deliveries due ahead of
// another team's one, a deliverer's pass reads the due ids 64 at a time to the other team's.
// Measured on the Redis outbox (RedisDeliveryStore, a standalone redis-server), the Redis calls
// a pass makes, medians of `passes` passes each:
//   - the former pass: the 64 earliest due, ids and records (which never reached the other team);
//   - a first pass now: every page's ids and every record read once (the teams kept by id);
//   - a later pass now: every page's ids, the backlog's records not read again, the other team's read.
//
// Usage: npm run build && flock /tmp/bench.lock node bench/webhook-pass-price.mjs [n] [passes]
// (default 1000 deliveries, 200 passes); prints a Markdown table.

import { loadavg } from 'node:os'
import { Redis } from 'ioredis'
import { RedisSeal } from '../dist/redis/seal.js'
import { RedisDeliveryStore } from '../dist/jobs/redis-delivery-store.js'
import { newDelivery } from '../dist/jobs/delivery.js'
import { startStandalone } from './lib/redis-servers.mjs'
import { cleanup, log } from './lib/processes.mjs'
import { markdownTable, median } from './lib/stats.mjs'

const N = Number(process.argv[2] ?? 1000)
const PASSES = Number(process.argv[3] ?? 200)
const PAGE = 64

async function timed(fn) {
  const t0 = process.hrtime.bigint()
  const cpu0 = process.cpuUsage()
  await fn()
  const cpu = process.cpuUsage(cpu0)
  return { us: Number(process.hrtime.bigint() - t0) / 1000, cpuUs: cpu.user + cpu.system }
}

const server = await startStandalone('webhook-pass')
const redis = new Redis(server.redis.url)
try {
  const bounds = { keepMs: 3_600_000, lifeMs: 7_200_000, perTeam: N + 10 }
  const store = new RedisDeliveryStore({ redis, seal: new RedisSeal('webhook-pass-price-secret-0123456789'), prefix: 'bench:', bounds, onUnverified: () => undefined })
  const start = Date.now() - 60_000
  for (let i = 0; i < N; i++) await store.add(newDelivery({ job: `a-${i}`, team: 'backlog', jobState: 'failed', url: 'http://localhost/hook', body: `{"id":"a-${i}"}` }, start + i), start + i)
  await store.add(newDelivery({ job: 'b-0', team: 'other', jobState: 'done', url: 'http://localhost/hook', body: '{"id":"b-0"}' }, start + N), start + N)
  const now = Date.now()
  const former = async () => store.records((await store.dueIds(now, null, PAGE)).map((mark) => mark.id))
  const pass = async (known) => {
    for (let after = null; ; ) {
      const marks = await store.dueIds(now, after, PAGE)
      after = marks.at(-1) ?? after
      const read = await store.records(marks.map((mark) => mark.id).filter((id) => !known.has(id)))
      for (const d of read) known.set(d.id, d.team)
      if (marks.length < PAGE) return read.some((d) => d.team === 'other')
    }
  }
  const rows = { former: [], first: [], later: [] }
  for (let p = 0; p < PASSES; p++) {
    rows.former.push(await timed(former))
    const known = new Map()
    rows.first.push(await timed(() => pass(known)))
    known.delete(`msg_b-0`)
    for (const id of [...known.keys()]) if (known.get(id) === 'other') known.delete(id)
    rows.later.push(await timed(() => pass(known)))
  }
  const line = (what, xs) => [what, median(xs.map((x) => x.us)).toFixed(0), median(xs.map((x) => x.cpuUs)).toFixed(0)]
  console.log(`\n${N} due deliveries of one team ahead of another's one; ${PASSES} passes; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`)
  console.log(markdownTable(['pass', 'time (µs, median)', 'CPU of this process (µs, median)'], [line('former: the 64 earliest due (never the other team\'s)', rows.former), line('now, first: every id, every record read once', rows.first), line('now, later: every id, the backlog\'s records known', rows.later)]))
} finally {
  redis.disconnect()
  await server.stop()
  cleanup()
  log('done')
}
