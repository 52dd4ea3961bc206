// A request body's CPU price: what a JSON or form body costs the gateway on its whole path
// (read, the searches for a team key and the gateway's secrets, the parse and its checks,
// the scope's reading of its accounts and campaigns, the text sent on), asked by `inject`
// of the proxy listener in this process, a platform sandbox behind it on a loopback port.
// The sandbox's own work (its PHP/Laravel reading of the body) is in this process too: the
// same bodies sent straight to it are timed as well, and the difference is the gateway's.
// Bodies of 1 KiB, 64 KiB and 1 MiB (bodyLimit, the default) in the shapes an attacker
// picks: one long string, many values or strings (keys are bounded by limits.params), deep
// nesting within limits.jsonDepth, many `%` escapes, a long list of campaign ids, and the
// key's prefix many times over. The team is `writer` (advertisers [101], writes), the route
// POST /api/v1/campaign/get, whose account is the body's userId. CPU time
// (process.cpuUsage) a request, medians of the rounds after one to warm up. `--builds`
// measures an earlier build beside this one in the same run: copy its dist/ to a folder
// beside dist/ (dist-before/, say: `git checkout <commit> && npm run build:gateway && cp -r dist dist-before`, then back).
// Run after `npm run build:gateway`:
//   flock /tmp/bench.lock node_modules/.bin/node bench/body-cpu-price.mjs [--rounds=7] [--only=<name part>] [--builds=dist,dist-before]

/* global fetch */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { Writable } from 'node:stream'
import { pathToFileURL } from 'node:url'
import { sized } from './lib/sized-text.mjs'

const option = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const rounds = Number(option('rounds', '7'))
const only = option('only', '')
// Each build asked in turn, a round of each after the other's.
const builds = option('builds', 'dist').split(',')

const KEY = 'rgw_bench_writer_key_2222222222222222222222222'
const hash = `sha256:${createHash('sha256').update(KEY).digest('hex')}`
const TEAMS = `teams:\n  writer:\n    keys: ["${hash}"]\n    advertisers: [101]\n    write: true\n    rateLimit: { max: 1000000, window: 1m }\n`
const ROUTE = '/api/v1/campaign/get'
const DEFAULTS = new URL('../config/default.yaml', import.meta.url)
const KiB = 1024

/** A sandbox and a gateway of the build in `dir` in front of it, this process's own. */
async function start(dir) {
  const from = (path) => import(pathToFileURL(resolve(dir, path)).href)
  const [{ loadConfig }, { createGateway }, { startSandbox }] = await Promise.all([from('config.js'), from('compose.js'), from('sandbox/sandbox.js')])
  const sandbox = await startSandbox()
  const config = loadConfig({
    env: { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), CONFIG_FILE: '/virtual/config.yaml', LOG_LEVEL: 'info', ADMIN_TOKEN: 'bench-admin-token-0123456789abcdef' },
    // An earlier build's dist/ copied elsewhere reads the settings' defaults of this tree.
    readFile: (p) => (p === '/virtual/config.yaml' ? TEAMS : readFileSync(p.endsWith('/config/default.yaml') ? DEFAULTS : p, 'utf8')),
  })
  const gw = await createGateway(config, { logStream: new Writable({ write: (_c, _e, done) => done() }) })
  await gw.start()
  await gw.proxy.ready()
  return { dir, sandbox, gw }
}

const jsonShapes = {
  'one long string': (n) => `{"userId":101,"name":"${'a'.repeat(n)}"}`,
  'many values': (n) => `{"userId":101,"x":[${Array(n).fill('0').join(',')}]}`,
  'many strings': (n) => `{"userId":101,"x":[${Array(n).fill('"ab"').join(',')}]}`,
  'nesting 30 deep': (n) => `{"userId":101,"x":[${Array(n).fill(`${'['.repeat(29)}${']'.repeat(29)}`).join(',')}]}`,
  '% escapes': (n) => `{"userId":101,"name":"${'%41'.repeat(n)}"}`,
  'many campaign ids': (n) => `{"userId":101,"campaignIds":[${Array(n).fill('101001').join(',')}]}`,
  'rgw_ repeated': (n) => `{"userId":101,"name":"${'rgw_'.repeat(n)}"}`,
  'rgw_ and 15 characters repeated': (n) => `{"userId":101,"name":"${'rgw_abcdefghijklmno '.repeat(n)}"}`,
}
const formShapes = {
  'one long value': (n) => `userId=101&name=${'a'.repeat(n)}`,
  '% escapes': (n) => `userId=101&name=${'%41'.repeat(n)}`,
  'rgw_ repeated': (n) => `userId=101&name=${'rgw_'.repeat(n)}`,
  'deep brackets': (n) => `userId=101&name${'[a]'.repeat(n)}=1`,
  'many empty pairs': (n) => `userId=101${'&'.repeat(n)}`,
}

const cases = []
for (const size of [KiB, 64 * KiB, 1024 * KiB]) {
  for (const [shape, make] of Object.entries(jsonShapes)) cases.push({ name: `JSON ${shape}, ${size / KiB} KiB`, type: 'application/json', size, make })
  for (const [shape, make] of Object.entries(formShapes)) cases.push({ name: `form ${shape}, ${size / KiB} KiB`, type: 'application/x-www-form-urlencoded', size, make })
}
const chosen = cases.filter((c) => c.name.includes(only)).map((c) => ({ ...c, body: sized(c.size, c.make) }))

async function viaGateway({ gw, sandbox }, c) {
  sandbox.clearRequests()
  const res = await gw.proxy.inject({ method: 'POST', url: ROUTE, headers: { 'x-api-key': KEY, 'content-type': c.type }, payload: c.body })
  const why = res.statusCode >= 400 ? ` ${String(res.json().message).slice(0, 60)}…` : ''
  // Whether the body reached the sandbox: only then is the sandbox's work part of the request's.
  return `${res.statusCode}${sandbox.requests.some((r) => r.path === ROUTE) ? '' : ' (not sent on)'}${why}`
}

async function direct({ sandbox }, c) {
  const res = await fetch(`${sandbox.url}${ROUTE}`, { method: 'POST', headers: { authorization: `Bearer ${sandbox.issueToken()}`, 'content-type': c.type }, body: c.body })
  await res.arrayBuffer()
  return String(res.status)
}

/** CPU µs a call of `requests` calls of `send(stand, c)`; the last answer. */
async function cpu(send, stand, c, requests) {
  const before = process.cpuUsage()
  let status = ''
  for (let i = 0; i < requests; i++) status = await send(stand, c)
  const used = process.cpuUsage(before)
  return { us: (used.user + used.system) / requests, status }
}

const stands = []
for (const dir of builds) stands.push(await start(dir))
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const ms = (us) => (us / 1000).toFixed(2)
console.log(`node ${process.version}, ${rounds} rounds (the first to warm up, not counted), CPU ms a request, medians; the gateway's part: through it less straight to the sandbox (less nothing where the body was not sent on)`)
console.log(`| body | bytes | ${builds.map((b) => `${b}: answer | through the gateway | straight to the sandbox | the gateway's part`).join(' | ')} |`)
console.log(`|---|---:|${builds.map(() => '---|---:|---:|---:').join('|')}|`)
for (const c of chosen) {
  const requests = c.body.length > 256 * KiB ? 5 : c.body.length > 16 * KiB ? 20 : 200
  const rows = stands.map(() => ({ through: [], straight: [], status: '' }))
  for (let round = 0; round < rounds; round++) {
    for (const [i, stand] of stands.entries()) {
      const g = await cpu(viaGateway, stand, c, requests)
      const s = await cpu(direct, stand, c, requests)
      const row = rows[i]
      row.status = g.status
      if (round > 0) {
        row.through.push(g.us)
        row.straight.push(s.us)
      }
    }
  }
  const cells = rows.map((r) => {
    const part = median(r.through.map((t, i) => t - (r.status.includes('(not sent on)') ? 0 : r.straight[i])))
    return `${r.status} | ${ms(median(r.through))} | ${ms(median(r.straight))} | ${ms(part)}`
  })
  console.log(`| ${c.name} | ${c.body.length} | ${cells.join(' | ')} |`)
}
for (const { gw, sandbox } of stands) {
  await gw.close()
  await sandbox.close()
}
