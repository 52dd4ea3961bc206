// The bus on a Redis Cluster: PUBLISH (every message goes to every node over the cluster
// bus, each node delivers it to the subscribers connected to it) against SPUBLISH
// (Redis 7's sharded pub/sub: the message stays on the node owning its channel's slot,
// which delivers it to every subscriber, each connected to every node it needs). Three
// masters on loopback, 50 subscribers standing for 50 replicas (raw sockets that read
// and drop what they get), each subscribed to the bus's channels as the gateway names
// them; one publisher sending a fixed number of 200-byte messages, pipelined. Measured:
// the messages a second, and each node's CPU time (INFO cpu) per message, for all the
// messages on the busiest channel (`filled`, a fill's announcement) and spread over the
// channels evenly.

import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { freePort } from '../../scripts/free-port.mjs'
import { loadAverage } from '../lib/machine.mjs'
import { SERVER_CORE, launch, log, pin, stopProcess } from '../lib/processes.mjs'
import { markdownTable, median } from '../lib/stats.mjs'

export const id = 'pubsub'
export const title = 'The bus on a 3-master Redis Cluster: PUBLISH against sharded SPUBLISH'

const MASTERS = 3
const SUBSCRIBERS = 50
const CHANNELS = ['filled', 'fill-failed', 'purge', 'pauses', 'limit', 'seats', 'token', 'log-level', 'teams-reload', 'history-asked'].map((c) => `rgw:bus:${c}`)
const PAYLOAD = 'x'.repeat(200)
const BATCH = 500

/** The CRC16 slot of a key (no hash tag in the bus's channels). */
function slotOf(key) {
  let crc = 0
  for (const byte of Buffer.from(key)) {
    crc ^= byte << 8
    for (let i = 0; i < 8; i += 1) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
  }
  return crc % 16384
}

const resp = (...args) => `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`

/** Bytes the subscribers received: each delivery is checked to have happened. */
let received = 0

/** A socket that sends `command` and counts, then drops, whatever comes back. */
function sink(port, command) {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(command)
      resolve(socket)
    })
    socket.on('data', (chunk) => (received += chunk.length))
    socket.once('error', reject)
  })
}

async function startCluster() {
  const dir = mkdtempSync(join(tmpdir(), 'rgw-bench-cluster-'))
  const nodes = []
  for (let i = 0; i < MASTERS; i += 1) {
    const [port, bus] = [await freePort(), await freePort()]
    const nodeDir = join(dir, String(i))
    mkdirSync(nodeDir)
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', nodeDir, '--cluster-enabled', 'yes', '--cluster-config-file', join(nodeDir, 'nodes.conf'), '--cluster-port', String(bus), '--loglevel', 'warning']
    const [cmd, argv] = pin(SERVER_CORE, 'redis-server', args)
    const proc = await launch(`cluster-${i}`, cmd, argv, { ready: /Ready to accept connections|Server initialized/ })
    const admin = new Redis({ port, lazyConnect: true })
    await admin.connect()
    nodes.push({ port, bus, proc, admin, from: 0, to: 0 })
  }
  const per = Math.ceil(16384 / MASTERS)
  for (const [i, n] of nodes.entries()) {
    n.from = i * per
    n.to = Math.min(16384, (i + 1) * per) - 1
    await n.admin.call('CLUSTER', 'ADDSLOTSRANGE', String(n.from), String(n.to))
  }
  for (const n of nodes.slice(1)) await nodes[0].admin.call('CLUSTER', 'MEET', '127.0.0.1', String(n.port), String(n.bus))
  for (let i = 0; i < 200; i += 1) {
    const infos = await Promise.all(nodes.map((n) => n.admin.call('CLUSTER', 'INFO')))
    if (infos.every((s) => s.includes('cluster_state:ok') && s.includes(`cluster_known_nodes:${MASTERS}`))) break
    await sleep(50)
  }
  const owner = (channel) => nodes.find((n) => slotOf(channel) >= n.from && slotOf(channel) <= n.to)
  return {
    nodes,
    owner,
    close: async () => {
      for (const n of nodes) n.admin.disconnect()
      await Promise.all(nodes.map((n) => stopProcess(n.proc)))
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

const cpuOf = async (node) => {
  const info = await node.admin.info('cpu')
  const num = (name) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0)
  return num('used_cpu_sys') + num('used_cpu_user')
}

/** Publishes `count` messages (`channelOf(i)`), `sharded`: SPUBLISH to each channel's owner; else PUBLISH to one node. Resolves once every reply came. */
async function publish(cluster, count, channelOf, sharded) {
  const sockets = new Map()
  const pending = []
  const socketFor = async (node) => {
    if (!sockets.has(node)) {
      const s = connect(node.port, '127.0.0.1')
      await new Promise((resolve) => s.once('connect', resolve))
      const state = { socket: s, replies: 0, waiters: [] }
      s.on('data', (chunk) => {
        for (const byte of chunk) if (byte === 0x3a) state.replies += 1
        while (state.waiters.length && state.waiters[0].n <= state.replies) state.waiters.shift().resolve()
      })
      sockets.set(node, state)
    }
    return sockets.get(node)
  }
  const sent = new Map()
  for (let i = 0; i < count; i += BATCH) {
    const byNode = new Map()
    for (let j = i; j < Math.min(count, i + BATCH); j += 1) {
      const channel = channelOf(j)
      const node = sharded ? cluster.owner(channel) : cluster.nodes[0]
      byNode.set(node, (byNode.get(node) ?? '') + resp(sharded ? 'SPUBLISH' : 'PUBLISH', channel, PAYLOAD))
      sent.set(node, (sent.get(node) ?? 0) + 1)
    }
    for (const [node, text] of byNode) {
      const s = await socketFor(node)
      s.socket.write(text)
      // At most a few batches in flight: the replies (integers) pace the publisher.
      pending.push(new Promise((resolve) => s.waiters.push({ n: sent.get(node) - 2 * BATCH, resolve })))
      if (pending.length > 4) await pending.shift()
    }
  }
  await Promise.all(
    [...sockets].map(([node, s]) => new Promise((resolve) => {
      s.waiters.push({ n: sent.get(node), resolve })
      if (s.replies >= sent.get(node)) resolve()
    })),
  )
  for (const s of sockets.values()) s.socket.destroy()
}

/** Runs the scenario; resolves with its Markdown section. */
export async function run({ quick }) {
  const COUNT = quick ? 20_000 : 100_000
  const ROUNDS = quick ? 1 : 3
  const cluster = await startCluster()
  const subscribers = []
  try {
    const rows = []
    for (const sharded of [false, true]) {
      // Each replica's subscriber: one connection to one node for SUBSCRIBE (ioredis's
      // Cluster subscriber), or one to each node owning a channel for SSUBSCRIBE.
      for (let s = 0; s < SUBSCRIBERS; s += 1) {
        if (!sharded) subscribers.push(await sink(cluster.nodes[s % MASTERS].port, resp('SUBSCRIBE', ...CHANNELS)))
        else for (const node of cluster.nodes) {
          const owned = CHANNELS.filter((c) => cluster.owner(c) === node)
          // One SSUBSCRIBE per channel: its channels must share a slot.
          if (owned.length) subscribers.push(await sink(node.port, owned.map((c) => resp('SSUBSCRIBE', c)).join('')))
        }
      }
      await sleep(300)
      for (const [mix, channelOf] of [['all on `filled`', () => CHANNELS[0]], [`spread over ${CHANNELS.length} channels`, (i) => CHANNELS[i % CHANNELS.length]]]) {
        const rates = []
        const cpuPer = []
        const busiest = []
        for (let round = 0; round < ROUNDS; round += 1) {
          const before = await Promise.all(cluster.nodes.map(cpuOf))
          const bytesBefore = received
          const t0 = performance.now()
          await publish(cluster, COUNT, channelOf, sharded)
          const seconds = (performance.now() - t0) / 1000
          // Every subscriber got every message (the last ones may still be on their way).
          for (let i = 0; i < 100 && received - bytesBefore < COUNT * SUBSCRIBERS * PAYLOAD.length; i += 1) await sleep(50)
          if (received - bytesBefore < COUNT * SUBSCRIBERS * PAYLOAD.length) throw new Error(`the subscribers got ${received - bytesBefore} bytes, fewer than ${COUNT} messages to each of ${SUBSCRIBERS}`)
          const used = (await Promise.all(cluster.nodes.map(cpuOf))).map((c, i) => c - before[i])
          rates.push(COUNT / seconds)
          cpuPer.push((used.reduce((a, b) => a + b, 0) / COUNT) * 1e6)
          busiest.push((Math.max(...used) / COUNT) * 1e6)
        }
        rows.push([sharded ? 'SPUBLISH (sharded)' : 'PUBLISH', mix, Math.round(median(rates)).toLocaleString('en-US'), median(cpuPer).toFixed(1), median(busiest).toFixed(1)])
        log(`pubsub: ${rows.at(-1).join(' | ')}`)
      }
      for (const s of subscribers.splice(0)) s.destroy()
      await sleep(300)
    }
    return [
      `${MASTERS} masters, ${SUBSCRIBERS} subscribers to the bus's ${CHANNELS.length} channels, ${COUNT.toLocaleString('en-US')} messages of ${PAYLOAD.length} bytes per round, median of ${ROUNDS} rounds; the three nodes on one core, the load on the other; load average ${loadAverage()}.`,
      '',
      markdownTable(['publish', 'messages', 'messages/s', 'Redis CPU per message, all nodes (µs)', 'on the busiest node (µs)'], rows),
      '',
    ].join('\n')
  } finally {
    for (const s of subscribers) s.destroy()
    await cluster.close()
  }
}
