// The price of looking for a secret in each of its spellings (src/observe/secret-forms.ts),
// side by side in one run, medians of alternating runs after one of each to warm up:
//   - a log line scrubbed of 5 secrets as they are, against as they are, escaped or percent-encoded;
//   - a 3 MiB report (plain, and gzipped) scanned for the platform token as it is (the
//     gateway built in --baseline=<dir>, before the spellings), against in every spelling.
// Run after `npm run build`, beside no other benchmark:
//   flock /tmp/bench.lock node bench/secret-spellings.mjs --baseline=/path/to/built/checkout

import { join, resolve } from 'node:path'
import { Readable } from 'node:stream'
import { pathToFileURL } from 'node:url'
import { gzipSync } from 'node:zlib'
import { SecretSet } from '../dist/observe/logger.js'
import { withoutToken } from '../dist/platform/client/token-echo.js'

const baseline = process.argv.find((a) => a.startsWith('--baseline='))?.slice('--baseline='.length)

/** The scrub as it was: the literal values alone. */
class Literal {
  #values = new Set()
  #pattern = null
  add(value) {
    this.#values.add(value)
    this.#pattern = null
  }
  scrub(line) {
    this.#pattern ??= new RegExp([...this.#values].sort((a, b) => b.length - a.length).map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g')
    return line.replace(this.#pattern, '[REDACTED]')
  }
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

const secrets = ['eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJnYXRld2F5In0.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg', 'attack-admin-token/0123456789abcdef', 'gw-secret+0123456789abcdefghij=', 'sandbox-password-xyz', 'client-secret-abcdefgh0123']
const now = new SecretSet()
const before = new Literal()
for (const s of secrets) {
  now.add(s)
  before.add(s)
}
const line = '{"level":30,"time":1795724190620,"pid":1152,"hostname":"vm","reqId":"fe5e7f89-25f1-88ce-9201-000000000004","client":"127.0.0.1","team":"demo","keyId":"demo","method":"POST","path":"/api/v1/campaign/get","advertiser":null,"route":"proxy","status":413,"durationMs":2.7,"upstreamMs":null,"cache":null,"bytes":411,"userAgent":null,"msg":"request"}\n'
const scrubNs = (set) => {
  const started = process.hrtime.bigint()
  for (let i = 0; i < 100_000; i++) set.scrub(line)
  return Number(process.hrtime.bigint() - started) / 100_000
}
const literal = []
const spelled = []
// A first round of each warms the JIT up; it is not counted.
scrubNs(before)
scrubNs(now)
for (let run = 0; run < 21; run++) {
  literal.push(scrubNs(before))
  spelled.push(scrubNs(now))
}
console.log(`log line scrubbed of 5 secrets, ns, medians of 21: as they are ${median(literal).toFixed(0)}, every spelling but base64 ${median(spelled).toFixed(0)}, ratio ${(median(spelled) / median(literal)).toFixed(2)}`)

if (baseline !== undefined) {
  const old = await import(pathToFileURL(join(resolve(baseline), 'dist/platform/client/token-echo.js')).href)
  const TOKEN = 'eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJhdWQiOiIxMjMiLCJzdWIiOiI0NTYiLCJleHAiOjE4MDAwMDAwMDB9.c2lnbmF0dXJlLW9mLXRoZS10b2tlbi1zaWduYXR1cmUtb2YtdGhlLXRva2Vu'
  const rows = Array.from({ length: 20_000 }, (_, i) => `{"date":"2026-01-${String(1 + (i % 28)).padStart(2, '0')}","campaignId":${101000 + i},"campaignName":"Campaign ${i}","impressions":${10000 + i},"clicks":${i % 97},"ctr":0.83,"spent":12.51,"reach":8120,"currency":"USD"}`)
  const body = Buffer.from(`{"data":[${rows.join(',')}]}`)
  const chunks = (bytes) => Array.from({ length: Math.ceil(bytes.length / 65_536) }, (_, i) => bytes.subarray(i * 65_536, (i + 1) * 65_536))
  const scanMs = async (scan, parts, headers) => {
    const answer = scan(headers, Readable.from(parts, { objectMode: false }), TOKEN)
    const started = process.hrtime.bigint()
    for await (const _chunk of answer);
    return Number(process.hrtime.bigint() - started) / 1e6
  }
  for (const [name, parts, headers] of [['plain', chunks(body), {}], ['gzip', chunks(gzipSync(body)), { 'content-encoding': 'gzip' }]]) {
    const alone = []
    const every = []
    await scanMs(old.withoutToken, parts, headers)
    await scanMs(withoutToken, parts, headers)
    for (let run = 0; run < 25; run++) {
      alone.push(await scanMs(old.withoutToken, parts, headers))
      every.push(await scanMs(withoutToken, parts, headers))
    }
    console.log(`${(body.length / 1_048_576).toFixed(1)} MiB report, ${name}, scanned for the token, ms, medians of 25: as it is ${median(alone).toFixed(2)}, every spelling ${median(every).toFixed(2)}, ratio ${(median(every) / median(alone)).toFixed(2)}`)
  }
}
