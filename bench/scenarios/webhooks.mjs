// The price of the webhook's platform-address check (docs/jobs.md, "Never the platform's
// socket") and what reusing connections gives back: one delivery attempt's POST to a
// receiver on loopback named `localhost`, over http and over https (a certificate made
// for the run, trusted through the connections' `ca`), made three ways: a plain fetch
// (keep-alive, no check); a connection of its own per attempt (the platform's names
// resolved, a lookup that refuses the platform's socket, destroyed after the answer: the
// deliverer before it kept connections); and as the deliverer makes it (the platform's
// names resolved per attempt, its connections kept per receiver origin, each checked when
// opened: jobs/webhook-connections.ts). Rounds alternate the ways, each round's times are
// divided by its plain ones, and the medians are reported.

import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer as createHttpServer } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { log } from '../lib/processes.mjs'
import { fmtMs, fmtX, markdownTable, median } from '../lib/stats.mjs'

export const id = 'webhooks'
export const title = 'Webhook attempts: the platform-address check and kept connections against a plain POST'

const BODY = JSON.stringify({ id: 'bench', state: 'done', result: '/api/v1/jobs/bench/result' })

/** A self-signed certificate for `localhost` (P-256), made with openssl for this run. */
function localhostCertificate() {
  const dir = mkdtempSync(join(tmpdir(), 'bench-webhooks-'))
  try {
    const key = join(dir, 'key.pem')
    const cert = join(dir, 'cert.pem')
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost'], { stdio: 'ignore' })
    return { key: readFileSync(key), cert: readFileSync(cert) }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Listens on 127.0.0.1; resolves with the receiver's URL under the name `localhost`. */
async function listen(server, scheme) {
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `${scheme}://localhost:${server.address().port}/hook`
}

/** Runs the scenario; resolves with its Markdown section. */
export async function run({ fixture, quick }) {
  const ROUNDS = quick ? 5 : 15
  const PER_ROUND = 50
  const { Agent, fetch: undiciFetch } = await import('undici')
  const { guardedLookup, platformSockets } = await import('../../dist/jobs/webhook-target.js')
  const { WebhookConnections } = await import('../../dist/jobs/webhook-connections.js')
  const tls = localhostCertificate()
  const answer = (req, res) => {
    req.resume()
    req.on('end', () => res.writeHead(204).end())
  }
  const servers = [createHttpServer(answer), createHttpsServer(tls, answer)]
  const urls = { http: await listen(servers[0], 'http'), https: await listen(servers[1], 'https') }
  const platform = [fixture.sandbox.url]
  const init = { method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY, redirect: 'manual' }
  const connect = { ca: tls.cert }
  const keptAlive = new Agent({ connect })
  const pools = new WebhookConnections(connect)
  const post = async (url, dispatcher) => {
    const res = await undiciFetch(url, { ...init, signal: globalThis.AbortSignal.timeout(10_000), dispatcher })
    await res.arrayBuffer()
  }
  const ways = {
    plain: (url) => post(url, keptAlive),
    own: async (url) => {
      const isPlatform = await platformSockets(platform)
      const dispatcher = new Agent({ connect: { ...connect, lookup: guardedLookup(new URL(url), isPlatform) } })
      try {
        await post(url, dispatcher)
      } finally {
        void dispatcher.destroy()
      }
    },
    kept: async (url) => {
      const target = new URL(url)
      await post(url, pools.for(target, await platformSockets(platform)))
    },
  }
  const timed = async (way, url) => {
    const started = performance.now()
    for (let i = 0; i < PER_ROUND; i += 1) await way(url)
    return (performance.now() - started) / PER_ROUND
  }
  try {
    const rows = []
    for (const scheme of ['http', 'https']) {
      const times = { plain: [], own: [], kept: [] }
      for (let round = 0; round <= ROUNDS; round += 1) {
        const t = {}
        for (const way of Object.keys(ways)) t[way] = await timed(ways[way], urls[scheme])
        // Round 0 warms every way up.
        if (round === 0) continue
        for (const way of Object.keys(ways)) times[way].push(t[way])
      }
      const ratio = (way) => median(times[way].map((x, k) => x / times.plain[k]))
      log(`webhooks ${scheme}: plain ${fmtMs(median(times.plain))}, own connection ${fmtMs(median(times.own))} (${fmtX(ratio('own'))}), kept ${fmtMs(median(times.kept))} (${fmtX(ratio('kept'))})`)
      rows.push(
        [`${scheme}: plain fetch (keep-alive, no check)`, fmtMs(median(times.plain)), '—'],
        [`${scheme}: a connection of its own per attempt (platform resolved, lookup checked)`, fmtMs(median(times.own)), fmtX(ratio('own'))],
        [`${scheme}: as the deliverer makes it (platform resolved per attempt, connections kept per origin, each checked when opened)`, fmtMs(median(times.kept)), fmtX(ratio('kept'))],
      )
    }
    return [
      `${ROUNDS} rounds after a warm-up, ${PER_ROUND} attempts one after another per way in each round, the ways alternating; the receiver (\`localhost\`, a P-256 certificate for https) answers 204 at once.`,
      '',
      markdownTable(['attempt', 'per attempt (median of rounds)', '× plain (median of each round)'], rows),
      '',
    ].join('\n')
  } finally {
    await pools.close()
    await keptAlive.destroy()
    for (const server of servers) {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  }
}
