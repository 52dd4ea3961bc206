#!/usr/bin/env node
/**
 * `promtool check metrics` on what a real gateway serves at /metrics (CI, after the build).
 *
 * Starts the built gateway (dist/main.js) in demo mode on free loopback ports, with one
 * extra team whose rate limit is 1 request a minute, sends it a little traffic so the
 * labelled series exist (report MISS and HIT, a proxied call, 400, 401, 404,
 * 429), fetches /metrics from the admin listener and pipes it to `promtool check metrics`.
 * It also checks that every gateway_* series the chart's alerts and dashboard name
 * (helm/report-gateway/templates/prometheusrule.yaml, dashboards/report-gateway.json) is
 * in the text. The PrometheusRule itself is checked by test/unit/prometheus.test.ts
 * (`promtool check rules` and `promtool test rules` on the rendered chart).
 *
 * Usage: npm run check:prometheus   (needs `npm run build` and promtool on PATH; through npm, the
 * gateway runs on the Node that npm ci installs)
 */
/* global fetch -- Node's own, not in the repository's eslint globals */
import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort } from './free-port.mjs'

const ROOT = fileURLToPath(new URL('../', import.meta.url))

const LIMITED_KEY = 'rgw_check_prometheus_limited_key_0000000000000'

function fail(message) {
  console.error(`check-prometheus: FAILED: ${message}`)
  process.exitCode = 1
}

/** The gateway's stdout until `pattern` matches, or a timeout. */
function waitFor(child, output, pattern, ms) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not print ${pattern} within ${ms} ms:\n${output.text}`)), ms)
    const check = () => {
      const m = pattern.exec(output.text)
      if (m) {
        clearTimeout(timer)
        child.stdout.off('data', check)
        resolve(m)
      }
    }
    child.stdout.on('data', check)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`gateway exited (${code}) before printing ${pattern}:\n${output.text}`))
    })
    check()
  })
}

async function main() {
  if (spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status !== 0) {
    fail('promtool is not on PATH (apt-get install -y --no-install-recommends prometheus)')
    return
  }
  const dir = mkdtempSync(join(tmpdir(), 'rgw-check-prometheus-'))
  const configFile = join(dir, 'config.yaml')
  const hash = createHash('sha256').update(LIMITED_KEY, 'utf8').digest('hex')
  writeFileSync(configFile, `teams:\n  limited:\n    keys: ["sha256:${hash}"]\n    advertisers: ["*"]\n    rateLimit: { max: 1, window: 1m }\n`)

  const adminPort = await freePort()
  const env = { ...process.env }
  for (const name of Object.keys(env)) if (/^(PLATFORM_|CREDENTIAL_|REDIS_|ADMIN_TOKEN|GATEWAY_SECRET)/.test(name)) delete env[name]
  Object.assign(env, { DEMO: '1', HOST: '127.0.0.1', PORT: '0', ADMIN_HOST: '127.0.0.1', ADMIN_PORT: String(adminPort), CONFIG_FILE: configFile, LOG_LEVEL: 'warn' })
  const child = spawn(process.execPath, [join(ROOT, 'dist/main.js')], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  const output = { text: '' }
  child.stdout.on('data', (chunk) => (output.text += chunk))
  child.stderr.on('data', (chunk) => (output.text += chunk))
  try {
    const [, key] = await waitFor(child, output, /Demo team key[^:]*: (\S+)/, 30_000)
    const [, url] = await waitFor(child, output, /curl -s -i -H '[^']*' '(http:\/\/[^']+)'/, 5_000)
    const report = new URL(url)
    const origin = report.origin
    const get = (path, headers = {}) => fetch(new URL(path, origin), { headers: { 'x-api-key': key, ...headers } }).then(async (r) => (await r.arrayBuffer(), r.status))
    const statuses = {
      miss: await get(report.pathname + report.search),
      hit: await get(report.pathname + report.search),
      refresh: await get(report.pathname + report.search, { 'cache-control': 'no-cache' }),
      badQuery: await get(`${report.pathname}?advertiserId=${report.searchParams.get('advertiserId')}&dateFrom=2026-02-30&dateTo=2026-03-01`),
      noKey: await fetch(new URL(report.pathname + report.search, origin)).then(async (r) => (await r.arrayBuffer(), r.status)),
      notFound: await get('/nope'),
      proxied: await fetch(new URL('/api/v1/campaign/get', origin), {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ userId: Number(report.searchParams.get('advertiserId')) }),
      }).then(async (r) => (await r.arrayBuffer(), r.status)),
      limited1: await get(report.pathname + report.search, { 'x-api-key': LIMITED_KEY }),
      limited2: await get(report.pathname + report.search, { 'x-api-key': LIMITED_KEY }),
    }
    console.log(`check-prometheus: traffic sent, statuses ${JSON.stringify(statuses)}`)

    const metrics = await fetch(`http://127.0.0.1:${adminPort}/metrics`)
    if (metrics.status !== 200) throw new Error(`GET /metrics answered ${metrics.status}`)
    const text = await metrics.text()
    const file = join(dir, 'metrics.txt')
    writeFileSync(file, text)
    const families = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]))
    console.log(`check-prometheus: /metrics holds ${families.size} metric families, ${text.split('\n').filter((l) => l && !l.startsWith('#')).length} samples`)

    // What the chart's alerts and dashboard name must be there.
    const chartText = [
      readFileSync(join(ROOT, 'helm/report-gateway/templates/prometheusrule.yaml'), 'utf8'),
      readFileSync(join(ROOT, 'helm/report-gateway/dashboards/report-gateway.json'), 'utf8'),
    ].join('\n')
    const used = new Set([...chartText.matchAll(/\bgateway_[a-z0-9_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, '')))
    const missing = [...used].filter((name) => !families.has(name)).sort()
    if (missing.length > 0) fail(`the chart names series /metrics does not have: ${missing.join(', ')}`)
    else console.log(`check-prometheus: all ${used.size} series the chart's alerts and dashboard use are exposed`)
    for (const name of ['gateway_rate_limited_total', 'gateway_cache_requests_total', 'gateway_requests_total']) {
      if (!new RegExp(`^${name}\\{`, 'm').test(text)) fail(`no labelled sample of ${name}: the traffic above did not reach it`)
    }

    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' })
    const findings = `${check.stdout}${check.stderr}`.split('\n').map((l) => l.trim()).filter(Boolean)
    console.log(`check-prometheus: promtool check metrics exit ${check.status}`)
    // 0 only: 1 is text promtool cannot read, 3 lint findings (src/observe/metrics.ts drops
    // prom-client's *_total gauges; test/integration/metrics-lint.test.ts checks the same).
    if (check.status !== 0 || findings.length > 0) fail(`promtool check metrics exit ${check.status}:\n${findings.join('\n')}`)
    else console.log('check-prometheus: promtool check metrics: no findings')
  } finally {
    child.kill('SIGTERM')
    await new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve()
      const timer = setTimeout(() => {
        child.kill('SIGKILL')
        resolve()
      }, 15_000)
      child.once('exit', () => {
        clearTimeout(timer)
        resolve()
      })
    })
    rmSync(dir, { recursive: true, force: true })
  }
}

main().then(
  () => {
    if (!process.exitCode) console.log('check-prometheus: OK')
  },
  (err) => fail(err.stack ?? String(err)),
)
