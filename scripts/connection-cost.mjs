#!/usr/bin/env node
/**
 * `node scripts/connection-cost.mjs [N] [healthz|silent]`: what N connections held open
 * cost a replica. Starts one gateway (dist/main.js, demo mode, server.maxConnections N + 1,
 * on free loopback ports, with the image's memory settings and scripts/soak-probe.mjs),
 * reads its memory (resident as it is, then after a full GC), opens N connections to its proxy listener (200 at a time), each asking
 * `GET /healthz` once and keeping the connection alive (healthz: a connection Node's
 * parser read), or sending nothing (silent: one the gateway's socket entrance holds),
 * reads its memory again, and prints both and the difference per connection still held.
 * Where the open-file limit leaves fewer than N (half of it past 512: 10,000 need a limit
 * of 20,512), the bound closes the rest (closed). The connections are counted (answered,
 * closed), never timed. docs/decisions/connection-bound.md.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { fileURLToPath } from 'node:url'
import { freePort } from './free-port.mjs'
import { imageMemoryEnv } from './image-env.mjs'

const n = Number(process.argv[2] ?? 10_000)
const mode = process.argv[3] ?? 'healthz'
const root = fileURLToPath(new URL('..', import.meta.url))
const [port, adminPort] = [await freePort(), await freePort()]
const image = imageMemoryEnv(`${root}/Dockerfile`)
// The listener's bound above N, so that every connection is held.
const configFile = `${mkdtempSync(`${tmpdir()}/connection-cost-`)}/config.yaml`
writeFileSync(configFile, `server:\n  maxConnections: ${n + 1}\n`)
const child = spawn(process.execPath, ['--expose-gc', '--import', `${root}/scripts/soak-probe.mjs`, 'dist/main.js'], {
  cwd: root,
  env: { ...process.env, ...image, DEMO: '1', CONFIG_FILE: configFile, PORT: String(port), ADMIN_PORT: String(adminPort), LOG_LEVEL: 'info' },
  stdio: ['ignore', 'pipe', 'pipe'],
})
let err = ''
child.stderr.setEncoding('utf8').on('data', (d) => (err += d))
const exited = (code) => {
  process.stderr.write(`the gateway exited (${code}) before the measure ended:\n${err}`)
  process.exit(1)
}
child.on('exit', exited)
await new Promise((resolve) => {
  let out = ''
  child.stdout.setEncoding('utf8').on('data', (d) => {
    out += d
    if (out.includes('report gateway listening')) resolve()
  })
})
child.stdout.resume()

/** The gateway's resident memory as it is (rssBeforeGc), then its memory after a full GC (scripts/soak-probe.mjs). */
async function memory() {
  const rssBeforeGc = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]) * 1024
  const from = err.length
  child.kill('SIGUSR2')
  for (;;) {
    const line = /SOAK-MEM (\{.*\})\n/.exec(err.slice(from))
    if (line) return { rssBeforeGc, ...JSON.parse(line[1]) }
    await new Promise((r) => setTimeout(r, 50))
  }
}

const before = await memory()
const sockets = []
let answered = 0
let closed = 0
const open = () =>
  new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port })
    sockets.push(s)
    let got = ''
    s.on('error', () => resolve())
    s.on('close', () => {
      closed++
      resolve()
    })
    s.on('connect', () => (mode === 'silent' ? resolve() : s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')))
    s.setEncoding('latin1').on('data', (d) => {
      got += d
      if (got.includes('\r\n\r\n')) {
        answered++
        resolve()
      }
    })
  })
for (let i = 0; i < n; i += 200) await Promise.all(Array.from({ length: Math.min(200, n - i) }, open))
const after = await memory()
const mib = (b) => +(b / 2 ** 20).toFixed(1)
const perKiB = (key) => +((after[key] - before[key]) / (n - closed) / 1024).toFixed(2)
console.log(JSON.stringify({ mode, n, answered, closed, rssBeforeGcMiB: [mib(before.rssBeforeGc), mib(after.rssBeforeGc)], rssMiB: [mib(before.rss), mib(after.rss)], heapUsedMiB: [mib(before.heapUsed), mib(after.heapUsed)], rssBeforeGcPerConnectionKiB: perKiB('rssBeforeGc'), rssPerConnectionKiB: perKiB('rss'), heapPerConnectionKiB: perKiB('heapUsed') }))
for (const s of sockets) s.destroy()
child.off('exit', exited)
child.kill()
