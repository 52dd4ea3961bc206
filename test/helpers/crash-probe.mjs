// Loaded into a gateway a test starts (`node --import <this> dist/main.js`): makes it
// crash as a bug would (see crash-line.test.ts).
// - CRASH_AT_START=<path ending>: that module of the gateway throws CRASH_MESSAGE as it
//   loads, after its own code (a plugin that throws at start).
// - Over IPC, { kind: 'reject' }: a promise rejected with CRASH_MESSAGE that no code
//   handles; { kind: 'throw' }: CRASH_MESSAGE thrown in a timer, caught by no code.
import { registerHooks } from 'node:module'

const message = process.env.CRASH_MESSAGE ?? 'crash probe'
const atStart = process.env.CRASH_AT_START
if (atStart) {
  registerHooks({
    load(url, context, next) {
      const loaded = next(url, context)
      if (!url.endsWith(atStart)) return loaded
      return { ...loaded, source: `${String(loaded.source)}\nthrow new Error(${JSON.stringify(message)})\n` }
    },
  })
}

process.on('message', (asked) => {
  if (asked.kind === 'reject') void Promise.reject(new Error(message))
  if (asked.kind === 'throw') setTimeout(() => {
    throw new Error(message)
  })
})
// The channel must not keep a gateway alive that would otherwise exit.
process.channel?.unref()
