// Loaded into a gateway a test starts (`node --expose-gc --import <this> dist/main.js`,
// with an IPC channel; see gateway-memory.ts): the product has no hook of its own for
// this. On { id, kind: 'memory' }: the resident size, then the memory a full collection
// left. On { id, kind: 'snapshot', path }: a heap snapshot written there.
import { writeHeapSnapshot } from 'node:v8'

// The collection V8 makes when memory runs short (a heap snapshot makes it too): it also
// gives back the pages V8 keeps for reuse and its young generation's, which follow how
// fast garbage was made, not what the process keeps.
const collect = () => globalThis.gc({ type: 'major', execution: 'sync', flavor: 'last-resort' })

process.on('message', async (message) => {
  if (message.kind === 'memory') {
    const rssBeforeGc = process.memoryUsage.rss()
    collect()
    // What a collection found dead in a FinalizationRegistry (AbortSignal.any registers
    // every signal it makes) is let go by the registry's callback, a task of its own.
    await new Promise((resolve) => setTimeout(resolve, 100))
    collect()
    process.send({ id: message.id, memory: { ...process.memoryUsage(), rssBeforeGc } })
  } else if (message.kind === 'snapshot') {
    process.send({ id: message.id, path: writeHeapSnapshot(message.path) })
  }
})
// The channel must not keep a gateway alive that would otherwise exit.
process.channel?.unref()
