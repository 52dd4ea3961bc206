import type { ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Cluster, Redis } from 'ioredis'
import { launchRedis, onFreePorts, redisTlsOptions, stopRedis, type RedisTls } from './start-redis.js'

// Production Redis is rarely one server: the gateway's key layout, Lua scripts, MULTI
// and pub/sub are checked here on a real Cluster and behind a real Sentinel, each made
// on loopback from the same redis-server binary as start-redis.ts.

/** One node of a topology, as the gateway's config names it. */
interface RedisNodeAddress {
  host: string
  port: number
}

export interface RedisTopology {
  /** The lines of the config file's `redis:` section that point the gateway at it. */
  configLines: string[]
  /** A client for looking inside: a Cluster client, or a Sentinel-routed master client. */
  client: Redis | Cluster
  /** Keys matching `pattern` on every master. */
  keys(pattern: string): Promise<string[]>
  /** Empties every master (replicas follow). */
  flush(): Promise<void>
  close(): Promise<void>
}

export interface ClusterTopology extends RedisTopology {
  /** Stops the master at `index` (its slots have no replica to fail over to); resolves with its port. */
  stopMaster(index: number): Promise<number>
  /** Starts the master at `index` again, on its port with its cluster config (its slots its own again). */
  restartMaster(index: number): Promise<void>
}

export interface ReplicatedClusterTopology extends RedisTopology {
  /** The port of the master serving `slot` now. */
  masterOf(slot: number): Promise<number>
  /**
   * SIGKILLs the master serving `slot` once its replica's link is up (it holds what the
   * master held), and resolves once the Cluster promoted the replica: the slot table names
   * it and every node says cluster_state:ok. With `meanwhile`, the replica is frozen
   * (SIGSTOP) while it runs and until the master is gone: what it writes to that master
   * never reaches the replica, as a write Redis' asynchronous replication had not passed on.
   */
  killMaster(slot: number, meanwhile?: () => Promise<void>): Promise<{ from: number; to: number }>
  /** The port of every node, masters and replicas. */
  ports: number[]
  /** SIGKILLs the node of `port`, frozen (SIGSTOP) first while `meanwhile` runs: its connections hear nothing, then end. */
  killNode(port: number, meanwhile?: () => Promise<void>): Promise<void>
  /** Starts the node of `port` again with its cluster config, and resolves once it follows its master again (a replica in sync). */
  restartNode(port: number): Promise<void>
}

export interface SentinelTopology extends RedisTopology {
  /** Asks the sentinel to fail over, and resolves once a replica was promoted and the sentinel names it. */
  failover(): Promise<{ from: number; to: number }>
  /** SIGKILLs the master, and resolves once the sentinel noticed and promoted the replica (no replica is left). */
  killMaster(): Promise<{ from: number; to: number }>
  /** SIGKILLs the master with the sentinel told not to fail over (its down-after an hour): it names the gone master on; resolves with its port. */
  killMasterUnpromoted(): Promise<number>
}

const BASE_ARGS = ['--save', '', '--appendonly', 'no']
const SLOTS = 16_384
const READY_MS = 20_000

function nodeLines(key: string, nodes: RedisNodeAddress[]): string[] {
  return [`  ${key}:`, ...nodes.map((n) => `    - { host: "${n.host}", port: ${n.port} }`)]
}

async function waitUntil(what: string, cond: () => Promise<boolean>, ms = READY_MS): Promise<void> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await cond().catch(() => false)) return
    await sleep(50)
  }
  throw new Error(`redis topology: timed out waiting for ${what}`)
}

function direct(port: number, tls?: RedisTls): Redis {
  const c = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1, lazyConnect: true, ...(tls ? redisTlsOptions(tls) : {}) })
  c.on('error', () => undefined)
  return c
}

async function stopAll(children: ChildProcess[], dir: string): Promise<void> {
  await Promise.all(children.map((c) => stopRedis(c, true)))
  rmSync(dir, { recursive: true, force: true })
}

/**
 * Three masters (no replicas), the 16384 slots split between them by hand
 * (CLUSTER ADDSLOTSRANGE, CLUSTER MEET), each with its cluster bus on a free port of
 * its own (`cluster-port`: port + 10000 may not be free, or even a port). Every node
 * announces itself by its address, 127.0.0.1 (CLUSTER SLOTS names it so). With `tls`
 * every node and the bus are TLS only, and the config lines name the seeds `localhost`,
 * as an operator names them by a DNS name.
 */
export async function startRedisCluster(masters = 3, tls?: RedisTls): Promise<ClusterTopology> {
  return onFreePorts(masters * 2, async (ports) => {
    const dir = mkdtempSync(join(tmpdir(), 'rgw-cluster-'))
    const children: ChildProcess[] = []
    const admins: Redis[] = []
    try {
      const nodes = Array.from({ length: masters }, (_, i) => ({ port: ports[i * 2] as number, bus: ports[i * 2 + 1] as number }))
      const launchNode = (i: number) => {
        const node = nodes[i] as { port: number; bus: number }
        return launchRedis(node.port, clusterNodeArgs(join(dir, String(i)), node.bus), undefined, tls)
      }
      for (const [i, node] of nodes.entries()) {
        mkdirSync(join(dir, String(i)))
        children.push(await launchNode(i))
        admins.push(direct(node.port, tls))
      }
      const per = Math.ceil(SLOTS / masters)
      for (const [i, admin] of admins.entries()) {
        await admin.call('CLUSTER', 'ADDSLOTSRANGE', String(i * per), String(Math.min(SLOTS, (i + 1) * per) - 1))
      }
      const first = admins[0] as Redis
      for (const node of nodes.slice(1)) await first.call('CLUSTER', 'MEET', '127.0.0.1', String(node.port), String(node.bus))
      await waitUntil('cluster_state:ok on every node', async () => {
        for (const admin of admins) {
          const info = (await admin.call('CLUSTER', 'INFO')) as string
          if (!info.includes('cluster_state:ok') || !info.includes(`cluster_known_nodes:${masters}`)) return false
        }
        return true
      })
      for (const admin of admins) admin.disconnect()
      const addresses = nodes.map((n) => ({ host: '127.0.0.1', port: n.port }))
      const client = new Cluster(addresses, { redisOptions: { maxRetriesPerRequest: 1, ...(tls ? redisTlsOptions(tls) : {}) } })
      client.on('error', () => undefined)
      const eachMaster = async <T>(fn: (node: Redis) => Promise<T>): Promise<T[]> => Promise.all(client.nodes('master').map(fn))
      await waitUntil('the cluster client', async () => (await client.ping()) === 'PONG')
      return {
        configLines: nodeLines('cluster', tls ? nodes.map((n) => ({ host: 'localhost', port: n.port })) : addresses),
        client,
        keys: async (pattern) => (await eachMaster((n) => n.keys(pattern))).flat().sort(),
        flush: async () => {
          await eachMaster((n) => n.flushall())
        },
        stopMaster: async (index) => {
          await stopRedis(children[index] as ChildProcess, true)
          return nodes[index]?.port as number
        },
        restartMaster: async (index) => {
          children[index] = await launchNode(index)
        },
        close: async () => {
          client.disconnect()
          await stopAll(children, dir)
        },
      }
    } catch (err) {
      for (const admin of admins) admin.disconnect()
      await stopAll(children, dir)
      throw err
    }
  })
}

/** A Cluster node's arguments: its own folder and config file, its bus port, failure detection in 2 s, announced as 127.0.0.1. */
function clusterNodeArgs(nodeDir: string, bus: number): string[] {
  return [
    ...BASE_ARGS,
    '--dir', nodeDir,
    '--cluster-enabled', 'yes',
    '--cluster-config-file', join(nodeDir, 'nodes.conf'),
    '--cluster-port', String(bus),
    '--cluster-node-timeout', '2000',
    '--cluster-announce-ip', '127.0.0.1',
  ]
}

/**
 * Three masters, each with one replica (CLUSTER REPLICATE), as a production Cluster runs
 * (Bitnami's redis-cluster: 3 masters, 1 replica each): a master killed is failed over
 * by the Cluster itself once `cluster-node-timeout` (2 s here) passes, and the node
 * started again rejoins as its former replica's replica.
 */
export async function startReplicatedCluster(masters = 3): Promise<ReplicatedClusterTopology> {
  return onFreePorts(masters * 4, async (ports) => {
    const dir = mkdtempSync(join(tmpdir(), 'rgw-cluster-'))
    const byPort = new Map<number, ChildProcess>()
    const nodes = Array.from({ length: masters * 2 }, (_, i) => ({ port: ports[i * 2] as number, bus: ports[i * 2 + 1] as number }))
    const launchNode = async (i: number) => {
      const node = nodes[i] as { port: number; bus: number }
      byPort.set(node.port, await launchRedis(node.port, clusterNodeArgs(join(dir, String(i)), node.bus)))
    }
    const admins: Redis[] = []
    const stopEvery = () => stopAll([...byPort.values()], dir)
    try {
      for (const [i, node] of nodes.entries()) {
        mkdirSync(join(dir, String(i)))
        await launchNode(i)
        admins.push(direct(node.port))
      }
      const per = Math.ceil(SLOTS / masters)
      for (let i = 0; i < masters; i++) await (admins[i] as Redis).call('CLUSTER', 'ADDSLOTSRANGE', String(i * per), String(Math.min(SLOTS, (i + 1) * per) - 1))
      for (const node of nodes.slice(1)) await (admins[0] as Redis).call('CLUSTER', 'MEET', '127.0.0.1', String(node.port), String(node.bus))
      await waitUntil('every node known to every node', async () => {
        for (const admin of admins) if (!((await admin.call('CLUSTER', 'INFO')) as string).includes(`cluster_known_nodes:${nodes.length}`)) return false
        return true
      })
      for (let i = 0; i < masters; i++) {
        const id = (await (admins[i] as Redis).call('CLUSTER', 'MYID')) as string
        await (admins[masters + i] as Redis).call('CLUSTER', 'REPLICATE', id)
      }
      const inSync = async (admin: Redis) => ((await admin.info('replication')) as string).includes('master_link_status:up')
      await waitUntil('every replica in sync', async () => (await Promise.all(admins.slice(masters).map(inSync))).every(Boolean))
      await waitUntil('cluster_state:ok on every node', async () => (await Promise.all(admins.map(async (a) => ((await a.call('CLUSTER', 'INFO')) as string).includes('cluster_state:ok')))).every(Boolean))
      for (const admin of admins) admin.disconnect()
      const addresses = nodes.slice(0, masters).map((n) => ({ host: '127.0.0.1', port: n.port }))
      const client = new Cluster(addresses, { redisOptions: { maxRetriesPerRequest: 1 } })
      client.on('error', () => undefined)
      await waitUntil('the cluster client', async () => (await client.ping()) === 'PONG')
      // Each node asked on a connection of its own: the client's own node list lags a failover.
      const eachMaster = async <T>(fn: (node: Redis) => Promise<T>): Promise<T[]> => {
        const results: T[] = []
        for (const { port } of nodes) {
          const c = direct(port)
          try {
            if (((await c.info('replication').catch(() => '')) as string).includes('role:master')) results.push(await fn(c))
          } finally {
            c.disconnect()
          }
        }
        return results
      }
      /** Asks the live nodes, each on a connection of its own: the port serving `slot`, once every live node agrees. */
      const masterOf = async (slot: number, except?: number): Promise<number> => {
        let found = 0
        await waitUntil(`one master of slot ${slot} named by every live node`, async () => {
          const seen = new Set<number>()
          for (const node of nodes) {
            if (node.port === except) continue
            const c = direct(node.port)
            try {
              const ranges = (await c.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][]
              const range = ranges.find(([from, to]) => from <= slot && slot <= to)
              if (range) seen.add(range[2][1])
              if (!((await c.call('CLUSTER', 'INFO')) as string).includes('cluster_state:ok')) return false
            } finally {
              c.disconnect()
            }
          }
          found = [...seen][0] ?? 0
          return seen.size === 1 && found !== except
        })
        return found
      }
      const replicaOf = (master: number) => nodes[(nodes.findIndex((n) => n.port === master) + masters) % nodes.length]?.port as number
      return {
        configLines: nodeLines('cluster', addresses),
        client,
        keys: async (pattern) => (await eachMaster((n) => n.keys(pattern))).flat().sort(),
        flush: async () => {
          await eachMaster((n) => n.flushall())
        },
        masterOf: (slot) => masterOf(slot),
        killMaster: async (slot, meanwhile) => {
          const from = await masterOf(slot)
          // Its replica: whichever node follows it (the one it was made with, or the node it demoted).
          const followers: number[] = []
          for (const node of nodes) {
            if (node.port === from) continue
            const c = direct(node.port)
            try {
              if (((await c.info('replication')) as string).includes(`master_port:${from}`)) followers.push(node.port)
              else continue
              await waitUntil('the replica in sync', () => inSync(c))
            } finally {
              c.disconnect()
            }
          }
          if (followers.length === 0) throw new Error(`redis topology: no replica follows ${from} (the expected one: ${replicaOf(from)})`)
          const frozen = meanwhile ? followers.map((port) => byPort.get(port) as ChildProcess) : []
          for (const child of frozen) child.kill('SIGSTOP')
          try {
            // The frozen replica's socket still takes what the master sends, until its buffers
            // are full: a value larger than both fills them, and what follows stays in the master.
            if (meanwhile) await fillReplicationBuffers(from, slot)
            await meanwhile?.()
            await stopRedis(byPort.get(from) as ChildProcess, true)
          } finally {
            for (const child of frozen) child.kill('SIGCONT')
          }
          const to = await masterOf(slot, from)
          return { from, to }
        },
        ports: nodes.map((n) => n.port),
        killNode: async (port, meanwhile) => {
          const child = byPort.get(port) as ChildProcess
          child.kill('SIGSTOP')
          try {
            await meanwhile?.()
          } finally {
            await stopRedis(child, true)
          }
        },
        restartNode: async (port) => {
          await launchNode(nodes.findIndex((n) => n.port === port))
          const c = direct(port)
          try {
            await waitUntil('the restarted node to follow its master', async () => ((await c.info('replication')) as string).includes('role:slave') && (await inSync(c)))
          } finally {
            c.disconnect()
          }
        },
        close: async () => {
          client.disconnect()
          await stopEvery()
        },
      }
    } catch (err) {
      for (const admin of admins) admin.disconnect()
      await stopEvery()
      throw err
    }
  })
}

/** Bytes beyond a loopback connection's largest buffers (net.ipv4.tcp_rmem and tcp_wmem: 32 MiB and 4 MiB at most by default). */
const BEYOND_SOCKET_BUFFERS = 48 * 1024 * 1024

/** Writes on the master of `port` one value larger than its replication link's socket buffers, in a key of `slot`. */
async function fillReplicationBuffers(port: number, slot: number): Promise<void> {
  const master = direct(port)
  try {
    let key: string | undefined
    for (let from = 0; key === undefined; from += 20_000) {
      const names = Array.from({ length: 20_000 }, (_, i) => `filler:${from + i}`)
      const slots = (await master.pipeline(names.map((name) => ['cluster', 'keyslot', name])).exec()) ?? []
      key = names[slots.findIndex(([, s]) => Number(s) === slot)]
    }
    await master.set(key, Buffer.alloc(BEYOND_SOCKET_BUFFERS))
  } finally {
    master.disconnect()
  }
}

/**
 * A master, one replica and one sentinel watching them (quorum 1), with failure
 * detection in 1 s so that a failover takes a few seconds, not a minute. The sentinel
 * names the master by its address, 127.0.0.1. With `tls` the master and the replica are
 * TLS only (replication too) and the sentinel reaches them over TLS; it keeps a plain port
 * without a password, unless `sentinelTls`: then it too is TLS only, with the
 * data nodes' password (`requirepass` in its own config, as Bitnami's chart runs it).
 */
export async function startRedisSentinel(masterName = 'mymaster', tls?: RedisTls, { sentinelTls = false } = {}): Promise<SentinelTopology> {
  return onFreePorts(3, async ([masterPort, replicaPort, sentinelPort]) => {
    const dir = mkdtempSync(join(tmpdir(), 'rgw-sentinel-'))
    const children: ChildProcess[] = []
    const byPort = new Map<number, ChildProcess>()
    const toSentinel = sentinelTls ? tls : undefined
    const sentinel = direct(sentinelPort as number, toSentinel)
    try {
      const server = async (port: number, args: string[]) => {
        const child = await launchRedis(port, [...BASE_ARGS, '--dir', dir, '--dbfilename', `${port}.rdb`, ...args], undefined, tls)
        children.push(child)
        byPort.set(port, child)
      }
      await server(masterPort as number, [])
      await server(replicaPort as number, ['--replicaof', '127.0.0.1', String(masterPort)])
      const replica = direct(replicaPort as number, tls)
      await waitUntil('the replica in sync', async () => ((await replica.info('replication')) as string).includes('master_link_status:up'))
      replica.disconnect()
      // The sentinel rewrites its config file: it must be its own, writable one.
      const configFile = join(dir, 'sentinel.conf')
      writeFileSync(
        configFile,
        [
          `dir ${dir}`,
          `sentinel monitor ${masterName} 127.0.0.1 ${masterPort} 1`,
          `sentinel down-after-milliseconds ${masterName} 1000`,
          `sentinel failover-timeout ${masterName} 10000`,
          `sentinel parallel-syncs ${masterName} 1`,
          ...(tls ? [`sentinel auth-pass ${masterName} ${tls.password}`] : []),
          '',
        ].join('\n'),
      )
      const tlsToServers = tls && !toSentinel ? ['--tls-cert-file', tls.files.cert, '--tls-key-file', tls.files.key, '--tls-ca-cert-file', tls.files.ca, '--tls-replication', 'yes'] : []
      children.push(await launchRedis(sentinelPort as number, ['--sentinel', ...tlsToServers], configFile, toSentinel))
      const replicasSeen = async () => {
        const replicas = (await sentinel.call('SENTINEL', 'REPLICAS', masterName)) as string[][]
        return replicas.some((r) => flagsOf(r) === 'slave')
      }
      await waitUntil('the sentinel to see the replica', replicasSeen)
      const sentinels = [{ host: '127.0.0.1', port: sentinelPort as number }]
      const sentinelOptions = toSentinel ? { sentinelTLS: redisTlsOptions(toSentinel).tls, sentinelPassword: toSentinel.password } : {}
      const client = new Redis({ sentinels, name: masterName, maxRetriesPerRequest: 1, ...sentinelOptions, ...(tls ? { ...redisTlsOptions(tls), enableTLSForSentinelMode: true } : {}) })
      client.on('error', () => undefined)
      await waitUntil('the sentinel client', async () => (await client.ping()) === 'PONG')
      const masterPortNow = async () => Number(((await sentinel.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', masterName)) as string[])[1])
      /** Resolves once the node that is not `master` has its replication link up: it holds what the master held. */
      const replicaInSync = async (master: number) => {
        const other = direct(master === masterPort ? (replicaPort as number) : (masterPort as number), tls)
        await waitUntil('the replica in sync', async () => ((await other.info('replication')) as string).includes('master_link_status:up'))
        other.disconnect()
      }
      const promotedFrom = async (from: number) => {
        await waitUntil('the promoted master', async () => (await masterPortNow()) !== from)
        const to = await masterPortNow()
        const promoted = direct(to, tls)
        await waitUntil('the promoted master to take writes', async () => ((await promoted.info('replication')) as string).includes('role:master'))
        promoted.disconnect()
        return { from, to }
      }
      return {
        configLines: [...nodeLines('sentinels', sentinels), `  sentinelName: ${masterName}`],
        client,
        keys: (pattern) => client.keys(pattern).then((k) => k.sort()),
        flush: async () => {
          await client.flushall()
        },
        failover: async () => {
          const from = await masterPortNow()
          // The replica must be known and in sync, or the sentinel refuses (NOGOODSLAVE).
          await waitUntil('a replica fit for promotion', replicasSeen)
          await replicaInSync(from)
          await sentinel.call('SENTINEL', 'FAILOVER', masterName)
          const moved = await promotedFrom(from)
          // The demoted master becomes the replica again once it has synced: the next failover needs it.
          await waitUntil('the old master to follow', replicasSeen)
          return moved
        },
        killMaster: async () => {
          const from = await masterPortNow()
          // A replica still in its first sync (a master demoted by the last failover) would be promoted without the data.
          await replicaInSync(from)
          await stopRedis(byPort.get(from) as ChildProcess, true)
          return promotedFrom(from)
        },
        killMasterUnpromoted: async () => {
          const from = await masterPortNow()
          await sentinel.call('SENTINEL', 'SET', masterName, 'down-after-milliseconds', '3600000')
          await stopRedis(byPort.get(from) as ChildProcess, true)
          return from
        },
        close: async () => {
          client.disconnect()
          sentinel.disconnect()
          await stopAll(children, dir)
        },
      }
    } catch (err) {
      sentinel.disconnect()
      await stopAll(children, dir)
      throw err
    }
  })
}

/** The `flags` field of a SENTINEL REPLICAS entry (a flat name/value list). */
function flagsOf(entry: string[]): string | undefined {
  const i = entry.indexOf('flags')
  return i === -1 ? undefined : entry[i + 1]
}
