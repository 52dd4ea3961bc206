// The price of searching a body passed on as it comes (neither JSON nor a form) for the
// gateway's secrets before it is sent (access/admission.ts readBody): the body read whole
// (up to bodyLimit, 1 MiB by default), read as Latin-1 (a character a byte; `--encoding=utf8`
// for the UTF-8 reading), and searched by SecretSet.holds (five
// secrets of five lengths, as in the request search's measure) and, where ADMIN_TOKENS_FILE
// names tokens, by AdminAuth.heldIn (each word of 16 characters or more hashed).
// Bodies of 64 KiB and 1 MiB, text (a multipart form of words) and binary (random bytes);
// medians of 7 rounds after 2 to warm up. Run after `npm run build`, beside no other benchmark:
//   flock /tmp/bench.lock node_modules/.bin/node bench/body-secret-search.mjs

import { createHash, randomBytes } from 'node:crypto'
import { SecretSet } from '../dist/observe/logger.js'
import { AdminAuth } from '../dist/access/admin-auth.js'

const secrets = ['eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJnYXRld2F5In0.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg', 'attack-admin-token/0123456789abcdef', 'gw-secret+0123456789abcdefghij=', 'sandbox-password-xyz', 'client-secret-abcdefgh0123']
const set = new SecretSet()
for (const s of secrets) set.add(s)
const named = new AdminAuth([{ name: 'ops', role: 'operator', hash: `sha256:${createHash('sha256').update('named-operator-token-0123456789').digest('hex')}` }])

function median(values) {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

function textBody(size) {
  const words = ['campaign', 'creative', 'banner', 'impression', 'advertiser', 'placement', 'content-disposition:', 'form-data;', 'name="note"', 'a-longer-identifier-of-twenty']
  let text = '--b\r\n'
  for (let i = 0; text.length < size; i++) text += `${words[i % words.length]}${i % 7 === 0 ? '\r\n' : ' '}`
  return Buffer.from(text.slice(0, size))
}

const bodies = [
  ['text 64 KiB', textBody(64 * 1024)],
  ['text 1 MiB', textBody(1024 * 1024)],
  ['binary 64 KiB', randomBytes(64 * 1024)],
  ['binary 1 MiB', randomBytes(1024 * 1024)],
]

function measure(fn, calls) {
  const started = process.hrtime.bigint()
  for (let i = 0; i < calls; i++) fn()
  return Number(process.hrtime.bigint() - started) / 1e6 / calls
}

const encoding = process.argv.find((a) => a.startsWith('--encoding='))?.slice('--encoding='.length) ?? 'latin1'
console.log(`| body (read as ${encoding}) | reading | + SecretSet.holds | + AdminAuth.heldIn (one named token) |`)
console.log('|---|---|---|---|')
for (const [name, body] of bodies) {
  const calls = body.length > 100_000 ? 10 : 160
  const rows = { read: [], holds: [], named: [] }
  for (let round = 0; round < 9; round++) {
    const read = measure(() => body.toString(encoding), calls)
    const holds = measure(() => set.holds(body.toString(encoding)), calls)
    const heldIn = measure(() => named.heldIn(body.toString(encoding)), calls)
    if (round < 2) continue
    rows.read.push(read)
    rows.holds.push(holds)
    rows.named.push(heldIn)
  }
  console.log(`| ${name} | ${median(rows.read).toFixed(3)} ms | ${median(rows.holds).toFixed(3)} ms | ${median(rows.named).toFixed(3)} ms |`)
}
