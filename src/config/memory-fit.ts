/**
 * Whether a replica's two memory budgets, and the connections its listeners may hold, fit
 * in its container's memory limit. The report cache (`cache.l1MaxBytes`) and the answers
 * on their way to callers (`platform.bufferTotalBytes`) each fill to their setting under
 * load, on top of what the process holds besides: with the defaults (64 MiB and 128 MiB) a
 * replica's cache full and 100 slow readers of 50 MiB reports peaked at 335–380 MiB
 * resident (docs/configuration.md, "Memory": 368–380 MiB over plain HTTP with the image's
 * memory lines), so up to 188 MiB beyond the two budgets. The listeners hold at most
 * `server.maxConnections` and `admin.maxConnections` connections, each idle one about
 * 12 KiB (CONNECTION_BYTES). A container whose limit is below their sum is killed
 * for memory the first time all fill.
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
export function memoryFitWarning(budgets: { l1MaxBytes: number; bufferTotalBytes: number; connections: number }, limitBytes: number): string | null {
  if (!(limitBytes > 0) || limitBytes >= NO_LIMIT_FROM) return null
  const connectionBytes = budgets.connections * CONNECTION_BYTES
  const needed = budgets.l1MaxBytes + budgets.bufferTotalBytes + connectionBytes + BEYOND_BUDGETS_BYTES
  if (needed <= limitBytes) return null
  const mib = (bytes: number) => `${Math.round(bytes / MiB)} MiB`
  return (
    `cache.l1MaxBytes (${mib(budgets.l1MaxBytes)}) + platform.bufferTotalBytes (${mib(budgets.bufferTotalBytes)}) + ` +
    `server.maxConnections + admin.maxConnections (${budgets.connections} connections, ${mib(connectionBytes)}) + about ${mib(BEYOND_BUDGETS_BYTES)} ` +
    `the process holds beside them at its peak = ${mib(needed)}, over this container's memory limit (${mib(limitBytes)}): ` +
    'under load the replica can be killed for memory; raise the limit (the chart\'s resources.limits.memory) or lower those settings'
  )
}
