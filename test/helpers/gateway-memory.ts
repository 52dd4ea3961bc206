import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { probeAsker, spawnGateway, type GatewayProcess, type SpawnOptions } from './gateway-process.js'

const PROBE = fileURLToPath(new URL('./memory-probe.mjs', import.meta.url))

export type GatewayMemory = NodeJS.MemoryUsage & { rssBeforeGc: number }

/** A built gateway (dist/main.js) whose memory a test can read: see memory-probe.mjs. */
export interface ProbedGateway extends GatewayProcess {
  /** process.memoryUsage() right after a full garbage collection, and the resident size before it. */
  memory(): Promise<GatewayMemory>
  /** Writes a heap snapshot of the gateway to `path`. */
  heapSnapshot(path: string): Promise<void>
}

export async function spawnProbedGateway(opts: Pick<SpawnOptions, 'env' | 'yaml'>): Promise<ProbedGateway> {
  const gw = await spawnGateway({ ...opts, nodeArgs: ['--expose-gc', '--import', PROBE], ipc: true })
  const ask = probeAsker(gw)
  return {
    ...gw,
    memory: () => ask<GatewayMemory>({ kind: 'memory' }, 'memory', 30_000),
    heapSnapshot: async (path) => {
      await ask<string>({ kind: 'snapshot', path }, 'path', 120_000)
    },
  }
}

/** Self size and count of the nodes of one kind in a heap snapshot. */
export interface HeapGroup {
  bytes: number
  count: number
}

// Strings and numbers are grouped by type (their names are their values); everything
// else by type and name (an object's name is its constructor's).
const BY_TYPE_ONLY = new Set(['string', 'concatenated string', 'sliced string', 'number', 'heap number', 'bigint', 'symbol'])

/** A .heapsnapshot file summed by node type and name, e.g. `object LRUCache`, `string`. */
export function heapGroups(file: string): Map<string, HeapGroup> {
  const snapshot = JSON.parse(readFileSync(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } }
    nodes: number[]
    strings: string[]
  }
  const { node_fields: fields, node_types: types } = snapshot.snapshot.meta
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [number, number, number]
  const typeNames = types[0]
  const groups = new Map<string, HeapGroup>()
  const { nodes, strings } = snapshot
  for (let i = 0; i < nodes.length; i += fields.length) {
    const type = typeNames[nodes[i + typeAt] as number] as string
    const key = BY_TYPE_ONLY.has(type) ? type : `${type} ${(strings[nodes[i + nameAt] as number] as string).slice(0, 80)}`
    const group = groups.get(key) ?? { bytes: 0, count: 0 }
    group.bytes += nodes[i + sizeAt] as number
    group.count += 1
    groups.set(key, group)
  }
  return groups
}

/** What grew between two summaries, largest growth in bytes first. */
export function heapGrowth(before: Map<string, HeapGroup>, after: Map<string, HeapGroup>): ({ name: string } & HeapGroup)[] {
  const names = new Set([...before.keys(), ...after.keys()])
  return [...names]
    .map((name) => ({ name, bytes: (after.get(name)?.bytes ?? 0) - (before.get(name)?.bytes ?? 0), count: (after.get(name)?.count ?? 0) - (before.get(name)?.count ?? 0) }))
    .sort((a, b) => b.bytes - a.bytes)
}
