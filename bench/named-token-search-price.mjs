// The price of finding a named admin token (ADMIN_TOKENS_FILE, known by its digest alone) in
// the texts an access line writes as the caller chose them (its path and user-agent): where
// ADMIN_TOKENS_FILE is set, each word of 16 characters or more in them is hashed and looked
// up (access/admin-auth.ts heldIn), its verdict remembered for a text that repeats
// (heldInLogged, what the log's formatter asks). Side by side in one run, medians of
// alternating runs after one of each to warm up: the access line written by pino with the
// gateway's options (to a stream that drops it) without named tokens, with 5 searched on
// every line (heldIn), and with 5 as the gateway searches them (heldInLogged).
// Run after `npm run build`, beside no other benchmark:
//   flock /tmp/bench.lock node bench/named-token-search-price.mjs

import { createHash } from 'node:crypto'
import { Writable } from 'node:stream'
import pino from 'pino'
import { AdminAuth } from '../dist/access/admin-auth.js'
import { loggerOptions, SecretSet } from '../dist/observe/logger.js'

function median(values) {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

const named = Array.from({ length: 5 }, (_, i) => ({
  name: `operator-${i}`,
  role: 'admin',
  hash: `sha256:${createHash('sha256').update(`named-admin-token-${i}-0123456789abcdef`).digest('hex')}`,
}))

function logger(search) {
  const secrets = new SecretSet()
  secrets.add('eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJnYXRld2F5In0.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg')
  if (search !== null) {
    const auth = new AdminAuth(named)
    secrets.searchByDigest((text) => auth[search](text))
  }
  const sink = new Writable({ write: (_chunk, _enc, done) => done() })
  return pino(loggerOptions('info', secrets), sink)
}

// An access line as request-log.ts writes it (the path without its query).
const line = (userAgent) => ({
  reqId: 'fe5e7f89-25f1-88ce-9201-000000000004',
  client: '127.0.0.1',
  team: 'dashboards',
  keyId: 'dash-1',
  method: 'GET',
  path: '/api/v1/report/campaigns/get',
  advertiser: 101,
  route: 'report',
  status: 200,
  durationMs: 0.4,
  upstreamMs: null,
  cache: 'HIT',
  bytes: 3999,
  userAgent,
})
const agents = {
  'a service (user-agent node)': 'node',
  'a browser (user-agent Chrome)': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36',
}

const N = 50_000
const nsPer = (log, fields) => {
  const started = process.hrtime.bigint()
  for (let i = 0; i < N; i++) log.info(fields, 'request')
  return Number(process.hrtime.bigint() - started) / N
}

const loggers = { 'no named tokens': logger(null), '5 searched every line': logger('heldIn'), '5 remembered (the gateway)': logger('heldInLogged') }
for (const [name, agent] of Object.entries(agents)) {
  const fields = line(agent)
  for (const log of Object.values(loggers)) nsPer(log, fields)
  const runs = Object.fromEntries(Object.keys(loggers).map((k) => [k, []]))
  for (let run = 0; run < 21; run++) for (const [k, log] of Object.entries(loggers)) runs[k].push(nsPer(log, fields))
  const base = median(runs['no named tokens'])
  const cells = Object.entries(runs).map(([k, ns]) => `${k} ${median(ns).toFixed(0)} (${(median(ns) / base).toFixed(2)}×)`)
  console.log(`access line, ${name}, ns a line, medians of 21: ${cells.join(', ')}`)
}
