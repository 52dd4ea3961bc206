// A closed loop (load.mjs `closedLoop`) on its own thread: its callers' work runs in this
// thread's event loop, not in the one that times another workload's answers.
import { parentPort, workerData } from 'node:worker_threads'
import { closedLoop, missesFrom, neverAsked } from './load.mjs'

const { origins, key, callers, route, maxSeconds, firstMiss } = workerData
missesFrom(firstMiss)
let used = 0
const stop = closedLoop({ origins, key, callers, maxSeconds, nextPath: () => (used++, neverAsked(route)) })
parentPort.once('message', async () => {
  const answers = await stop()
  parentPort.postMessage({ answers, used })
})
