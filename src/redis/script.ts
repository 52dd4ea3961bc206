import type { RedisClient } from './client.js'

type Arg = string | number

/**
 * A Lua script run by its SHA (EVALSHA), through ioredis's `defineCommand`: its text
 * travels to a Redis (or a Cluster node) once, when that one answers NOSCRIPT, rather
 * than with every call. Defined on each client the first time it runs there.
 */
export function redisScript<R>(name: string, lua: string, numberOfKeys: number): (redis: RedisClient, ...args: Arg[]) => Promise<R> {
  const defined = new WeakSet<RedisClient>()
  return (redis, ...args) => {
    if (!defined.has(redis)) {
      redis.defineCommand(name, { numberOfKeys, lua })
      defined.add(redis)
    }
    return (redis as unknown as Record<string, (...a: Arg[]) => Promise<R>>)[name]!(...args)
  }
}
