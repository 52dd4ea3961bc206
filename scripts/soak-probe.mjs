// Loaded into each gateway the soak starts (`node --expose-gc --import <this>`): on
// SIGUSR2, a full garbage collection, then one line on stderr with the memory it left,
// so that a growing heap is told apart from garbage not yet collected.
process.on('SIGUSR2', () => {
  globalThis.gc?.()
  const m = process.memoryUsage()
  process.stderr.write(`SOAK-MEM ${JSON.stringify({ rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers })}\n`)
})
