// The price of the proxy listener's `onSend` hook (src/compose/listeners.ts: the two browser
// headers of PROXY_ANSWER_HEADERS set on every answer its router writes) a router answer:
// Fastify 5 instances in this process, one route each answering a small JSON: with the hook
// as an async function, with it as a callback, and without, each asked by `inject` in turn
// (the same work but the hook's), CPU time (process.cpuUsage) a request, medians of the rounds
// after two to warm up; the difference is the hook's price. Run after `npm run build`:
//   flock /tmp/bench.lock node_modules/.bin/node bench/onsend-hook-price.mjs [--rounds=11] [--requests=5000]

import Fastify from 'fastify'
import { PROXY_ANSWER_HEADERS } from '../dist/http/answer-fields.js'

const option = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const rounds = Number(option('rounds', '11'))
const REQUESTS = Number(option('requests', '5000'))

/** `hook`: 'async' (as the listener had it), 'callback' (the same work, done by its callback) or null (none). */
async function app(hook) {
  const fastify = Fastify({ logger: false })
  if (hook === 'async') {
    fastify.addHook('onSend', async (_request, reply, payload) => {
      reply.headers(PROXY_ANSWER_HEADERS)
      return payload
    })
  }
  if (hook === 'callback') {
    fastify.addHook('onSend', (_request, reply, payload, done) => {
      reply.headers(PROXY_ANSWER_HEADERS)
      done(null, payload)
    })
  }
  fastify.get('/healthz', async () => ({ status: 'ok' }))
  await fastify.ready()
  return fastify
}

async function measure(fastify) {
  const before = process.cpuUsage()
  for (let i = 0; i < REQUESTS; i++) await fastify.inject({ method: 'GET', url: '/healthz' })
  const used = process.cpuUsage(before)
  return (used.user + used.system) / REQUESTS
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const apps = { async: await app('async'), callback: await app('callback'), none: await app(null) }
for (const which of ['async', 'callback']) {
  const answered = await apps[which].inject({ method: 'GET', url: '/healthz' })
  if (answered.headers['x-content-type-options'] !== 'nosniff') throw new Error(`the ${which} hook did not set its headers`)
}
const rows = { async: [], callback: [], none: [] }
const names = Object.keys(rows)
for (let round = 0; round < rounds; round++) {
  // The order moves by one each round.
  for (const which of names.map((_, i) => names[(i + round) % names.length])) {
    const us = await measure(apps[which])
    if (round >= 2) rows[which].push(us)
  }
}
const none = median(rows.none)
for (const which of names) {
  const m = median(rows[which])
  const paired = median(rows[which].map((v, i) => v - rows.none[i]))
  console.log(`inject GET /healthz, ${REQUESTS} a round, ${rows[which].length} rounds, onSend hook ${which}: ${m.toFixed(2)} µs a request${which === 'none' ? '' : `; +${(m - none).toFixed(2)} µs over none (paired median +${paired.toFixed(2)} µs, ${(m / none).toFixed(3)}×)`}`)
}
