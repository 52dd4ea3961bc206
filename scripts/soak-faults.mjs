/**
 * The faults of the chaos soak (`npm run soak -- --chaos`), one at a time. Each `run(env)`
 * brings its fault about, waits until it is over (the process restarted and ready, the
 * platform answering again) and resolves to a line saying what happened. `expectS`: about
 * how long it lasts, so that none starts too close to the end of the load. scripts/soak.mjs
 * gives the env:
 *   redis                 an ioredis connection of the soak's own (SKIPME: never killed)
 *   restartRedis()        SIGKILL the redis-server, start it again on its port
 *   pickReplica()         one of the replicas, at random
 *   restartReplica(r, s)  signal s to replica r, wait for its exit, start it again, wait until ready
 *   platform              kill(), start(), signal(name), control(method, path, body)
 *   sleep(ms)
 */

/** How long the platform stays stopped, hung, throttled or slow. */
export const PLATFORM_FAULT_MS = 10_000
/** The route of the 429 storm: the one every report read calls. */
export const STORM_ROUTE = '/api/v1/report/campaigns/get'
/** The retry-after of the storm's 429s (seconds): the gateway pauses the route that long. */
export const STORM_RETRY_AFTER_S = 2

/** The platform stand-in's usual weather: latency drawn between 50 and 200 ms, and failures at low rates. */
export const PLATFORM_LATENCY = { ms: 50, maxMs: 200 }
export const PLATFORM_WEATHER = { serverErrors: 0.02, throttles: 0.004, hangs: 0.002, cuts: 0.01 }
const SLOW_FACTOR = 10

export const FAULTS = [
  {
    name: 'redis CLIENT KILL TYPE normal',
    expectS: 0,
    run: async (env) => `${await env.redis.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes')} connections killed`,
  },
  {
    name: 'redis CLIENT KILL TYPE pubsub',
    expectS: 0,
    run: async (env) => `${await env.redis.call('CLIENT', 'KILL', 'TYPE', 'pubsub', 'SKIPME', 'yes')} connections killed`,
  },
  {
    name: 'redis SIGKILL and restart',
    expectS: 1,
    run: (env) => env.restartRedis(),
  },
  {
    name: 'redis DEBUG SLEEP 2',
    expectS: 2,
    run: async (env) => {
      const sleeper = env.redis.duplicate()
      sleeper.on('error', () => undefined)
      try {
        await sleeper.call('DEBUG', 'SLEEP', '2')
      } finally {
        sleeper.disconnect()
      }
      return 'Redis answered nothing for 2 s'
    },
  },
  {
    name: 'replica SIGKILL and restart',
    expectS: 3,
    run: (env) => env.restartReplica(env.pickReplica(), 'SIGKILL'),
  },
  {
    name: 'replica SIGTERM and restart',
    expectS: 5,
    run: (env) => env.restartReplica(env.pickReplica(), 'SIGTERM'),
  },
  {
    name: `platform stopped for ${PLATFORM_FAULT_MS / 1000} s`,
    expectS: PLATFORM_FAULT_MS / 1000 + 1,
    run: async (env) => {
      await env.platform.kill()
      await env.sleep(PLATFORM_FAULT_MS)
      return `platform process killed, started again: ${await env.platform.start()}`
    },
  },
  {
    name: `platform hanging (SIGSTOP) for ${PLATFORM_FAULT_MS / 1000} s`,
    expectS: PLATFORM_FAULT_MS / 1000,
    run: async (env) => {
      env.platform.signal('SIGSTOP')
      try {
        await env.sleep(PLATFORM_FAULT_MS)
      } finally {
        env.platform.signal('SIGCONT')
      }
      return 'SIGSTOP, then SIGCONT'
    },
  },
  {
    name: `platform 429 storm on one route for ${PLATFORM_FAULT_MS / 1000} s`,
    expectS: PLATFORM_FAULT_MS / 1000,
    run: async (env) => {
      await env.platform.control('POST', '/route-failure', { path: STORM_ROUTE, kind: 'status', status: 429, headers: { 'retry-after': String(STORM_RETRY_AFTER_S) } })
      try {
        await env.sleep(PLATFORM_FAULT_MS)
      } finally {
        await env.platform.control('DELETE', '/route-failure')
      }
      return `every call on ${STORM_ROUTE} answered 429 (retry-after: ${STORM_RETRY_AFTER_S})`
    },
  },
  {
    name: `platform answers slowed tenfold for ${PLATFORM_FAULT_MS / 1000} s`,
    expectS: PLATFORM_FAULT_MS / 1000,
    run: async (env) => {
      const slow = { ms: PLATFORM_LATENCY.ms * SLOW_FACTOR, maxMs: PLATFORM_LATENCY.maxMs * SLOW_FACTOR }
      await env.platform.control('POST', '/latency', slow)
      try {
        await env.sleep(PLATFORM_FAULT_MS)
      } finally {
        await env.platform.control('POST', '/latency', PLATFORM_LATENCY)
      }
      return `latency ${slow.ms}-${slow.maxMs} ms`
    },
  },
]
