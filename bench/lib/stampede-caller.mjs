// The stampede's callers in a process of their own that does nothing else (the runner
// and bench/stampede-context.mjs time theirs in their main process): started with an IPC
// channel, it runs one rawStampede a message and answers with its figures, the gateway's CPU over it and when
// the platform read the round's call (ms after the writes began, as the stand-in says).
// A message: { port, path, key, gatewayPid, standin (the stand-in's URL), bodyFile }.

import { readFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { http } from './http.mjs'
import { rawStampede } from './load.mjs'
import { threadRunNs } from './machine.mjs'
import { cleanup } from './processes.mjs'

let body = null
process.on('message', async ({ port, path, key, gatewayPid, standin, bodyFile }) => {
  body ??= readFileSync(bodyFile)
  let cpuNs = 0
  let epoch = 0
  let callAt = NaN
  try {
    const r = await rawStampede({
      port,
      callers: 200,
      path,
      key,
      expectBody: body,
      before: async () => {
        await http('DELETE', `${standin}/__count`)
        cpuNs = threadRunNs(gatewayPid)
        epoch = performance.timeOrigin + performance.now()
      },
      countCalls: async () => {
        cpuNs = threadRunNs(gatewayPid) - cpuNs
        const count = (await http('GET', `${standin}/__count`)).json()
        callAt = count.lastCallAt - epoch
        return count.count
      },
    })
    process.send({ ...r, cpuMs: cpuNs / 1e6, callAt })
  } catch (err) {
    process.send({ error: String(err?.stack ?? err) })
  }
})
process.on('disconnect', () => void cleanup().finally(() => process.exit(0)))
