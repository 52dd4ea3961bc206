// The price of searching every platform answer for the gateway's token (platform/client/
// token-echo.ts withoutToken: each spelling of the token, in the bytes as sent and, for a
// body in a coding, in the bytes it decodes to): the CPU time of one answer's body read
// through the search against the same body read as it comes (a build without the search).
// JSON bodies of 16 KiB and 1 MiB, identity and gzip, in chunks of 16 KiB (as a socket
// hands them on); a platform token of a JWT's length. CPU time of this process
// (process.cpuUsage: the search's and zlib's work, on this thread or another), the two
// ways alternating, medians of the rounds after two to warm up. Run after `npm run build`:
//   flock /tmp/bench.lock node_modules/.bin/node bench/token-echo-price.mjs [--rounds=11]

import { Readable } from 'node:stream'
import { gzipSync } from 'node:zlib'
import { withoutToken } from '../dist/platform/client/token-echo.js'

const option = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const rounds = Number(option('rounds', '11'))
const token = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJnYXRld2F5In0.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg'
const CHUNK = 16 * 1024

function reportJson(size) {
  const rows = []
  let text = ''
  for (let i = 0; text.length < size; i++) {
    rows.push({ date: `2025-01-${String((i % 28) + 1).padStart(2, '0')}`, campaignId: 1000 + i, impressions: 10_000 + i * 7, clicks: 100 + i, spend: (i * 1.37).toFixed(2) })
    if (i % 64 === 0) text = JSON.stringify({ data: rows })
  }
  return Buffer.from(JSON.stringify({ data: rows }).slice(0, size - 2) + ']}')
}

function chunksOf(bytes) {
  const chunks = []
  for (let at = 0; at < bytes.length; at += CHUNK) chunks.push(bytes.subarray(at, at + CHUNK))
  return chunks
}

/** Reads `stream` to its end. */
function drain(stream) {
  return new Promise((resolve, reject) => {
    let bytes = 0
    stream.on('data', (chunk) => (bytes += chunk.length))
    stream.once('end', () => resolve(bytes))
    stream.once('error', reject)
  })
}

/** CPU µs an answer, `answers` answers read one after the other. */
async function measure(chunks, headers, searched, answers) {
  const before = process.cpuUsage()
  for (let i = 0; i < answers; i++) {
    const body = Readable.from(chunks, { objectMode: false })
    await drain(searched ? withoutToken(headers, body, token) : body)
  }
  const used = process.cpuUsage(before)
  return (used.user + used.system) / answers
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
console.log('| body | read as it comes | searched for the token | the search\'s price |')
console.log('|---|---:|---:|---:|')
for (const size of [16 * 1024, 1024 * 1024]) {
  const json = reportJson(size)
  for (const coding of ['identity', 'gzip']) {
    const bytes = coding === 'gzip' ? gzipSync(json) : json
    const headers = { 'content-type': 'application/json', ...(coding === 'gzip' ? { 'content-encoding': 'gzip' } : {}), 'content-length': String(bytes.length) }
    const chunks = chunksOf(bytes)
    const answers = size > 100_000 ? 20 : 400
    const plain = []
    const searched = []
    for (let round = 0; round < rounds; round++) {
      const first = round % 2 === 0
      const a = await measure(chunks, headers, !first, answers)
      const b = await measure(chunks, headers, first, answers)
      if (round < 2) continue
      plain.push(first ? a : b)
      searched.push(first ? b : a)
    }
    const p = median(plain)
    const s = median(searched)
    console.log(`| ${size / 1024} KiB JSON, ${coding} (${bytes.length} bytes sent) | ${p.toFixed(1)} µs | ${s.toFixed(1)} µs | +${(s - p).toFixed(1)} µs (${(s / p).toFixed(2)}×) |`)
  }
}
