/**
 * Whether a replica's two memory budgets, and the connections its listeners may hold, fit
 * in its container's memory limit. The report cache (`cache.l1MaxBytes`) and the answers
 * on their way to callers (`platform.bufferTotalBytes`) each fill to their setting under
 * load, on top of what the process holds besides: with the defaults (64 MiB and 128 MiB) a
 * replica's cache full and 100 slow readers of 50 MiB reports peaked at 335–380 MiB
 * resident (docs/configuration.md, "Memory": 368–380 MiB over plain HTTP with the image's
 * memory lines), so up to 188 MiB beyond the two budgets. A replica without Redis also
 * keeps its report jobs' results in its memory, up to their bound. The listeners hold at
 * most `server.maxConnections` and `admin.maxConnections` connections, each idle one about
 * 12 KiB (CONNECTION_BYTES). A container whose limit is below their sum is killed for
 * memory the first time they fill.
 */

const MiB = 1024 * 1024

/** What the process holds beyond its two budgets at the measured peak (380 MiB with 192 MiB of budgets), rounded up. */
export const BEYOND_BUDGETS_BYTES = 192 * MiB

/**
 * What an idle kept-alive connection holds once Node's parser read a request on it, with
 * the image's memory settings: 11.6–12.2 KiB resident each, 5,000 and 10,000 of them on a
 * replica (scripts/connection-cost.mjs, docs/decisions/connection-bound.md), rounded up.
 */
export const CONNECTION_BYTES = 12 * 1024

/** A limit this large is none: cgroup v2's `max`, as process.constrainedMemory() reads it (2^64 - 1). */
const NO_LIMIT_FROM = 2 ** 62

/**
 * The warning for budgets that cannot fit in `limitBytes` (process.constrainedMemory():
 * 0 or about 2^64 when no limit is known, then null); null when they fit.
 */
export function memoryFitWarning(budgets: { l1MaxBytes: number; bufferTotalBytes: number; jobResults: JobResultsInMemory | null; connections: number }, limitBytes: number): string | null {
  if (!(limitBytes > 0) || limitBytes >= NO_LIMIT_FROM) return null
  const jobs = budgets.jobResults
  const connectionBytes = budgets.connections * CONNECTION_BYTES
  const needed = budgets.l1MaxBytes + budgets.bufferTotalBytes + (jobs?.bytes ?? 0) + connectionBytes + BEYOND_BUDGETS_BYTES
  if (needed <= limitBytes) return null
  const mib = (bytes: number) => `${Math.round(bytes / MiB)} MiB`
  const jobsPart = jobs && jobs.bytes > 0 ? `report jobs' results kept in memory (${mib(jobs.bytes)}: ${jobs.bound}, no Redis) + ` : ''
  return (
    `cache.l1MaxBytes (${mib(budgets.l1MaxBytes)}) + platform.bufferTotalBytes (${mib(budgets.bufferTotalBytes)}) + ${jobsPart}` +
    `server.maxConnections + admin.maxConnections (${budgets.connections} connections, ${mib(connectionBytes)}) + about ${mib(BEYOND_BUDGETS_BYTES)} ` +
    `the process holds beside them at its peak = ${mib(needed)}, over this container's memory limit (${mib(limitBytes)}): ` +
    'under load the replica can be killed for memory; raise the limit (the chart\'s resources.limits.memory) or lower those settings'
  )
}

/** The most of report jobs' results a replica keeps in its memory, and the setting that bounds it. */
export interface JobResultsInMemory {
  bytes: number
  bound: string
}

/**
 * The report jobs' results a replica without Redis keeps in its memory (jobs/job-store.ts),
 * at most: each team's results are bounded by the smaller of jobs.resultBytesPerTeam and its
 * even part of jobs.resultsRoom (redis/memory-room.ts), so every team's together by the
 * smaller of jobs.resultsRoom and jobs.resultBytesPerTeam for each team. null with Redis,
 * which keeps them.
 */
export function jobResultsInMemory(o: { redis: boolean; resultBytesPerTeam: number; resultsRoom: number | null; teams: number }): JobResultsInMemory | null {
  if (o.redis) return null
  const perTeam = o.resultBytesPerTeam * o.teams
  if (o.resultsRoom !== null && o.resultsRoom < perTeam) return { bytes: o.resultsRoom, bound: 'jobs.resultsRoom' }
  return { bytes: perTeam, bound: `jobs.resultBytesPerTeam for ${o.teams} team${o.teams === 1 ? '' : 's'}` }
}
