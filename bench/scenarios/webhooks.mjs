// The price of the webhook's platform-address check (docs/jobs.md, "Never the platform's
// socket"): one delivery attempt's POST to a receiver on loopback named `localhost`, made
// as a plain fetch (keep-alive, no check) and as the deliverer makes it (the platform's
// names resolved, a connection of its own whose lookup refuses the platform's socket,
// destroyed after the answer). Rounds alternate the two, each round's guarded times are
// divided by its plain ones, and the medians are reported.

import { createServer } from 'node:http'
import { performance } from 'node:perf_hooks'
import { log } from '../lib/processes.mjs'
import { fmtMs, fmtX, markdownTable, median } from '../lib/stats.mjs'

export const id = 'webhooks'
export const title = 'Webhook attempts: the platform-address check against a plain POST'

const BODY = JSON.stringify({ id: 'bench', state: 'done', result: '/api/v1/jobs/bench/result' })

/** Runs the scenario; resolves with its Markdown section. */
export async function run({ fixture, quick }) {
  const ROUNDS = quick ? 5 : 15
  const PER_ROUND = 50
  const { Agent, fetch: undiciFetch } = await import('undici')
  const { guardedLookup, platformSockets } = await import('../../dist/jobs/webhook-target.js')
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => res.writeHead(204).end())
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://localhost:${server.address().port}/hook`
  const platform = [fixture.sandbox.url]
  const init = { method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY, redirect: 'manual' }
  const plain = async () => {
    const res = await undiciFetch(url, { ...init, signal: globalThis.AbortSignal.timeout(10_000) })
    await res.arrayBuffer()
  }
  const guarded = async () => {
    const isPlatform = await platformSockets(platform)
    const dispatcher = new Agent({ connect: { lookup: guardedLookup(new URL(url), isPlatform) } })
    try {
      const res = await undiciFetch(url, { ...init, signal: globalThis.AbortSignal.timeout(10_000), dispatcher })
      await res.arrayBuffer()
    } finally {
      void dispatcher.destroy()
    }
  }
  const timed = async (attempt) => {
    const started = performance.now()
    for (let i = 0; i < PER_ROUND; i += 1) await attempt()
    return (performance.now() - started) / PER_ROUND
  }
  try {
    const times = { plain: [], guarded: [] }
    for (let round = 0; round <= ROUNDS; round += 1) {
      const p = await timed(plain)
      const g = await timed(guarded)
      // Round 0 warms both up.
      if (round === 0) continue
      times.plain.push(p)
      times.guarded.push(g)
    }
    const ratio = median(times.guarded.map((g, k) => g / times.plain[k]))
    log(`webhooks: plain ${fmtMs(median(times.plain))}, guarded ${fmtMs(median(times.guarded))}, ${fmtX(ratio)}`)
    return [
      `${ROUNDS} rounds after a warm-up, ${PER_ROUND} attempts one after another per way in each round; the receiver answers 204 at once.`,
      '',
      markdownTable(['attempt', 'per attempt (median of rounds)', '× plain (median of each round)'], [
        ['plain fetch (keep-alive, no check)', fmtMs(median(times.plain)), '—'],
        ['as the deliverer makes it (platform resolved, own connection, lookup checked)', fmtMs(median(times.guarded)), fmtX(ratio)],
      ]),
      '',
    ].join('\n')
  } finally {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
}
