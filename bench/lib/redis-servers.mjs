// Redis servers of the scale scenario, each its own process on the load core, stopped
// with the benchmark: one standalone server, or a Cluster of masters (no replicas), the
// 16384 slots split between them by hand and each with its cluster bus on a free port.

import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { freePort } from '../../scripts/free-port.mjs'
import { LOAD_CORE, launch, pin, stopProcess, tmp } from './processes.mjs'

const SLOTS = 16_384
const BASE_ARGS = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning']

async function server(name, args) {
  const port = await freePort()
  const [cmd, argv] = pin(LOAD_CORE, 'redis-server', ['--port', String(port), ...BASE_ARGS, ...args])
  const p = await launch(name, cmd, argv, { ready: /Ready to accept connections|Server initialized/ })
  return { ...p, port, pid: p.child.pid }
}

async function until(what, cond, ms = 20_000) {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await cond().catch(() => false)) return
    await sleep(50)
  }
  throw new Error(`redis: timed out waiting for ${what}`)
}

/**
 * One standalone redis-server: { redis (the gateway's BENCH_REDIS), pids, stop }.
 */
export async function startStandalone(name) {
  const s = await server(name, [])
  return { label: 'standalone', redis: { url: `redis://127.0.0.1:${s.port}` }, pids: [s.pid], stop: () => stopProcess(s) }
}

/** A Cluster of `masters` masters: { redis: { cluster: [{ host, port }] }, pids, stop }. */
export async function startCluster(name, masters = 3) {
  const nodes = []
  try {
    for (let i = 0; i < masters; i += 1) {
      const dir = join(tmp, `${name}-${i}`)
      mkdirSync(dir, { recursive: true })
      const bus = await freePort()
      nodes.push(await server(`${name}-${i}`, ['--dir', dir, '--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf'), '--cluster-port', String(bus), '--cluster-node-timeout', '5000']))
      nodes.at(-1).bus = bus
    }
    const admins = nodes.map((n) => new Redis({ host: '127.0.0.1', port: n.port, maxRetriesPerRequest: 1 }))
    try {
      const per = Math.ceil(SLOTS / masters)
      for (const [i, admin] of admins.entries()) await admin.call('CLUSTER', 'ADDSLOTSRANGE', String(i * per), String(Math.min(SLOTS, (i + 1) * per) - 1))
      for (const n of nodes.slice(1)) await admins[0].call('CLUSTER', 'MEET', '127.0.0.1', String(n.port), String(n.bus))
      await until('cluster_state:ok on every node', async () => {
        for (const admin of admins) {
          const info = await admin.call('CLUSTER', 'INFO')
          if (!info.includes('cluster_state:ok') || !info.includes(`cluster_known_nodes:${masters}`)) return false
        }
        return true
      })
    } finally {
      for (const admin of admins) admin.disconnect()
    }
  } catch (err) {
    await Promise.all(nodes.map((n) => stopProcess(n)))
    throw err
  }
  return {
    label: `Cluster of ${masters} masters`,
    redis: { cluster: nodes.map((n) => ({ host: '127.0.0.1', port: n.port })) },
    pids: nodes.map((n) => n.pid),
    stop: () => Promise.all(nodes.map((n) => stopProcess(n))),
  }
}
