// The price of a request's own searches for the gateway's secrets (SecretSet.holds: its
// target, its id, a traced request's agent), five secrets of five lengths, each build's dist/
// in turn, round after round (a build's dist/ copied beside dist/: `git checkout <commit> &&
// npm run build:gateway && cp -r dist dist-before`, then back). ns a search, medians of 7.
//   node_modules/.bin/node bench/secret-holds-price.mjs dist-before dist

import { resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'

const dirs = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['dist']
const SECRETS = ['eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJnYXRld2F5In0.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg', 'bench-admin-token-0123456789abcdef', 'gw-secret+0123456789abcdefghij=', 'sandbox-password-xyz', 'client-secret-abcdefgh0123']
const TEXTS = ['/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2025-01-01&dateTo=2025-02-05&byDate=1', 'req-0123456789abcdef', 'curl/8.5.0']
const N = 300_000

const sets = []
for (const dir of dirs) {
  const { SecretSet } = await import(pathToFileURL(resolve(dir, 'observe/logger.js')).href)
  const secrets = new SecretSet()
  for (const s of SECRETS) secrets.add(s)
  sets.push([dir, secrets])
}
const ns = Object.fromEntries(dirs.map((d) => [d, []]))
let found = 0
for (let round = 0; round < 7; round++) {
  for (const [dir, secrets] of sets) {
    const start = performance.now()
    for (let i = 0; i < N; i++) if (secrets.holds(TEXTS[i % TEXTS.length])) found++
    ns[dir].push(((performance.now() - start) * 1e6) / N)
  }
}
if (found > 0) throw new Error('a text without a secret was found to hold one')
for (const [dir, runs] of Object.entries(ns)) console.log(`${dir}: ${runs.sort((a, b) => a - b)[3].toFixed(0)} ns a search (median of 7)`)
