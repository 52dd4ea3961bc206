// A request body's CPU price, step by step: the functions admission runs on a JSON or form
// body of 1 MiB (src/access/admission.ts readBody, then the scope's reading), each timed
// alone on the same bodies as bench/body-cpu-price.mjs's shapes: the searches of the
// caller's bytes (read as Latin-1) for a team key and for the gateway's secrets, asked
// only of a body holding `rgw_` or `%`, as admission asks them; the parse and its checks;
// the same searches of the text sent on; the scope's reading of the accounts and campaigns
// named (namedInCall). Five secrets of five lengths (a platform JWT, ADMIN_TOKEN, a
// GATEWAY_SECRET, a password, a client secret), ADMIN_TOKEN among the admin tokens as the
// composition gives it. Medians of 7 runs after 2 to warm up, ms. `--builds` as in
// body-cpu-price.mjs. Run after `npm run build:gateway`:
//   flock /tmp/bench.lock node_modules/.bin/node bench/body-cpu-steps.mjs [--builds=dist,dist-before]

import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { sized } from './lib/sized-text.mjs'

const option = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const builds = option('builds', 'dist').split(',')
const KEY = 'rgw_bench_writer_key_2222222222222222222222222'
const TEAMS = `teams:\n  writer:\n    keys: ["sha256:${createHash('sha256').update(KEY).digest('hex')}"]\n    advertisers: [101]\n    write: true\n`
const DEFAULTS = new URL('../config/default.yaml', import.meta.url)
const PLATFORM_TOKEN = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJnYXRld2F5In0.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg'
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef'
const SECRETS = [PLATFORM_TOKEN, ADMIN_TOKEN, 'gw-secret+0123456789abcdefghij=', 'sandbox-password-xyz', 'client-secret-abcdefgh0123']
const LIMITS = { jsonDepth: 32, params: 256 }
const MiB = 1 << 20

const bodies = {
  'JSON one long string': ['json', (n) => `{"userId":101,"name":"${'a'.repeat(n)}"}`],
  'JSON many values': ['json', (n) => `{"userId":101,"x":[${Array(n).fill('0').join(',')}]}`],
  'JSON many strings': ['json', (n) => `{"userId":101,"x":[${Array(n).fill('"ab"').join(',')}]}`],
  'JSON % escapes': ['json', (n) => `{"userId":101,"name":"${'%41'.repeat(n)}"}`],
  'JSON many campaign ids': ['json', (n) => `{"userId":101,"campaignIds":[${Array(n).fill('101001').join(',')}]}`],
  'JSON rgw_ repeated': ['json', (n) => `{"userId":101,"name":"${'rgw_'.repeat(n)}"}`],
  'form one long value': ['form', (n) => `userId=101&name=${'a'.repeat(n)}`],
  'form % escapes': ['form', (n) => `userId=101&name=${'%41'.repeat(n)}`],
  'form many empty pairs': ['form', (n) => `userId=101${'&'.repeat(n)}`],
}

async function stepsOf(dir) {
  const from = (path) => import(pathToFileURL(resolve(dir, path)).href)
  const [{ loadConfig }, { SecretSet }, { AdminAuth }, { TeamDirectory }, { parseJsonBody, parseFormBody }, { namedInCall, placementsOf }, { checkTarget }, { holdsGatewaySecret }] = await Promise.all(
    ['config.js', 'observe/logger.js', 'access/admin-auth.js', 'access/team-auth.js', 'access/request-body.js', 'access/scope.js', 'access/request-target.js', 'access/admission.js'].map(from),
  )
  const config = loadConfig({
    env: { PLATFORM_BASE_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN, CONFIG_FILE: '/virtual/config.yaml', ADMIN_TOKEN },
    readFile: (p) => (p === '/virtual/config.yaml' ? TEAMS : readFileSync(p.endsWith('/config/default.yaml') ? DEFAULTS : p, 'utf8')),
  })
  const secrets = new SecretSet()
  for (const s of SECRETS) secrets.add(s)
  const parts = { secrets, adminAuth: new AdminAuth(config.admin.tokens, [config.admin.token, config.admin.viewerToken]) }
  const teams = new TeamDirectory(config.teams)
  const placements = placementsOf(config.ownership)
  const target = checkTarget('/api/v1/campaign/get', 256)
  return (kind, bytes) => {
    const steps = {}
    const time = (name, fn) => {
      const started = performance.now()
      const result = fn()
      steps[name] = performance.now() - started
      return result
    }
    const raw = bytes.includes('rgw_') || bytes.includes('%') ? bytes.toString('latin1') : null
    time('key in the bytes', () => raw !== null && teams.holdsKey(raw))
    time('secret in the bytes', () => raw !== null && holdsGatewaySecret(parts, raw))
    const body = time('parse', () => (kind === 'json' ? parseJsonBody(bytes, LIMITS) : parseFormBody(bytes, LIMITS)))
    time('key in the text', () => body.text.includes('rgw_') && teams.holdsKey(body.text))
    time('secret in the text', () => holdsGatewaySecret(parts, body.text))
    time('scope', () => {
      try {
        return namedInCall('POST', target, body, placements)
      } catch (err) {
        return err
      }
    })
    return steps
  }
}

const runs = Object.fromEntries(await Promise.all(builds.map(async (b) => [b, await stepsOf(b)])))
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const names = ['key in the bytes', 'secret in the bytes', 'parse', 'key in the text', 'secret in the text', 'scope']
console.log(`node ${process.version}, ms, medians of 7 runs after 2; each cell: ${builds.join(' / ')}`)
console.log(`| body (1 MiB) | ${names.join(' | ')} | all |`)
console.log(`|---|${names.map(() => '---:').join('|')}|---:|`)
for (const [name, [kind, make]] of Object.entries(bodies)) {
  const bytes = Buffer.from(sized(MiB, make))
  const times = Object.fromEntries(builds.map((b) => [b, []]))
  for (let r = 0; r < 9; r++) for (const b of builds) if (r >= 2) times[b].push(runs[b](kind, bytes))
  else runs[b](kind, bytes)
  const cell = (step) => builds.map((b) => median(times[b].map((t) => (step === null ? Object.values(t).reduce((x, y) => x + y, 0) : t[step]))).toFixed(1)).join(' / ')
  console.log(`| ${name} | ${names.map(cell).join(' | ')} | ${cell(null)} |`)
}
