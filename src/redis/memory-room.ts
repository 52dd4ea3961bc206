import type { Logger } from 'pino'
import { Cluster } from 'ioredis'
import type { RedisClient } from './client.js'

// Report jobs' results carry no expiry in Redis (a job done is never evicted before its
// caller fetches it), so an evicting Redis makes room for them by evicting everything
// else that expires: every team's report copies, rate-limit windows, the credential's
// seats. One team's results, within its own jobs.resultBytesPerTeam, can so fill a Redis
// smaller than the teams' bounds together, and then it refuses every write (no job of any
// team runs or ends). Half of maxmemory for the results leaves the other half to the rest.

/** What Redis says of its memory: `maxmemory` in bytes (0: no limit) and `maxmemory-policy`. */
export interface RedisMemory {
  maxBytes: number
  policy: string
}

/** The fields of INFO memory the room depends on, or null when the answer has none. */
export function parseMemoryInfo(info: string): RedisMemory | null {
  const max = /^maxmemory:(\d+)\r?$/m.exec(info)
  const policy = /^maxmemory_policy:(\S+?)\r?$/m.exec(info)
  return max && policy ? { maxBytes: Number(max[1]), policy: policy[1] as string } : null
}

/** The job results the teams may keep at once, when they can pass half of Redis' `maxmemory`; null when they cannot (or Redis has no limit). */
export function resultsPastRoom(memory: RedisMemory, bounds: { teams: number; resultBytesPerTeam: number }): number | null {
  const results = bounds.teams * bounds.resultBytesPerTeam
  return memory.maxBytes > 0 && results > memory.maxBytes / 2 ? results : null
}

/**
 * Asks Redis for its memory (every master of a Cluster, the smallest counting) and logs
 * one warning when the teams' job results may pass half of it. A Redis that does not
 * answer INFO (a managed one that renames it) is let be.
 */
export async function warnOfResultsRoom(redis: RedisClient, bounds: { teams: number; resultBytesPerTeam: number }, log: Logger): Promise<void> {
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis]
  let smallest: RedisMemory | null = null
  for (const node of nodes) {
    const memory = parseMemoryInfo(await node.info('memory').catch(() => ''))
    if (memory && memory.maxBytes > 0 && (smallest === null || memory.maxBytes < smallest.maxBytes)) smallest = memory
  }
  const results = smallest && resultsPastRoom(smallest, bounds)
  if (!smallest || results === null) return
  log.warn(
    { teams: bounds.teams, resultBytesPerTeam: bounds.resultBytesPerTeam, resultBytes: results, maxmemory: smallest.maxBytes, policy: smallest.policy },
    "redis may fill with report jobs' results: the teams' jobs.resultBytesPerTeam together pass half its maxmemory, and one team's results can evict every team's report copies, then stop every team's jobs (give Redis more memory or lower jobs.resultBytesPerTeam)",
  )
}
