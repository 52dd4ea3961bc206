// Loaded into a gateway a test starts (`node --allow-natives-syntax --expose-gc --import
// <this> dist/main.js`, with an IPC channel; see hidden-classes.test.ts): the product has
// no hook of its own for either question.
// - { id, kind: 'name-sets' }: how many name sets Ajv's code optimizer built in this
//   process, one `{ [name]: 1 }` object each (src/perf/validator-code.ts says why they matter).
// - { id, kind: 'tick-shape' }: after full collections, whether a new process.nextTick
//   queue entry has the hidden class of the one src/perf/tick-shape.ts keeps.
import { executionAsyncResource } from 'node:async_hooks'
import { createRequire } from 'node:module'

// The module the gateway's `import { Ajv } from 'ajv'` and Fastify's compilers load too.
const { Name } = createRequire(import.meta.url)('ajv/dist/compile/codegen/code.js')
const names = Object.getOwnPropertyDescriptor(Name.prototype, 'names')
let nameSets = 0
Object.defineProperty(Name.prototype, 'names', {
  ...names,
  get() {
    nameSets++
    return names.get.call(this)
  },
})

// V8's own test intrinsic; a Function, so that nothing parses it without the flag.
const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)')
// The module instance the gateway's app.js imported: the same file, the same URL.
const KEEPER = new URL('../../dist/perf/tick-shape.js', import.meta.url).href

async function tickShape() {
  const { keptTick } = await import(KEEPER)
  for (let i = 0; i < 3; i++) globalThis.gc({ type: 'major', execution: 'sync' })
  const fresh = await new Promise((resolve) => process.nextTick(() => resolve(executionAsyncResource())))
  const kept = keptTick()
  return { kept: kept !== undefined, same: kept !== undefined && haveSameMap(kept, fresh) }
}

process.on('message', async (message) => {
  if (message.kind === 'name-sets') process.send({ id: message.id, nameSets })
  else if (message.kind === 'tick-shape') process.send({ id: message.id, shape: await tickShape() })
})
// The channel must not keep a gateway alive that would otherwise exit.
process.channel?.unref()
