// Loaded into a gateway a test starts (`node --import <this> dist/main.js`, with an IPC
// channel; see start-modules.test.ts): records the URL of every module the process loads
// from a file, ESM and CommonJS alike, through Node's synchronous module hooks.
// - { id, kind: 'modules' }: the URLs loaded so far.
import { registerHooks } from 'node:module'

const loaded = new Set()
registerHooks({
  load(url, context, next) {
    if (url.startsWith('file:')) loaded.add(url)
    return next(url, context)
  },
})

process.on('message', (message) => {
  if (message.kind === 'modules') process.send({ id: message.id, modules: [...loaded] })
})
// The channel must not keep a gateway alive that would otherwise exit.
process.channel?.unref()
