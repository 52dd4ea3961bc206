// Loaded into each gateway the soak starts (`node --expose-gc --import <this>`): on
// SIGUSR2, a full garbage collection, then one line on stderr with the memory it left,
// so that a growing heap is told apart from garbage not yet collected. V8's new space (the
// young generation) is reported apart: V8 grows and shrinks it within its bound
// (--max-semi-space-size), whatever the process holds.
import { getHeapSpaceStatistics } from 'node:v8'

process.on('SIGUSR2', () => {
  globalThis.gc?.()
  const m = process.memoryUsage()
  const newSpace = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0
  process.stderr.write(`SOAK-MEM ${JSON.stringify({ rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, newSpace, external: m.external, arrayBuffers: m.arrayBuffers })}\n`)
})
