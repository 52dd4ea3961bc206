import type { ChainableCommander } from 'ioredis'
import type { RedisClient } from './client.js'

type Arg = string | number | Buffer

/** One step of a script, as its keys and arguments: steps written as Lua functions of (KEYS, ARGV) run alone or several in one script. */
export interface ScriptStep {
  keys: string[]
  args: Arg[]
}

/** A script run by SHA: on a client, or queued on a pipeline made from one. */
export interface RedisScript<R> {
  (redis: RedisClient, ...args: Arg[]): Promise<R>
  /** Defines the script on `redis`: a pipeline made from it afterwards has it (ioredis copies a client's scripts when it makes one). */
  define(redis: RedisClient): void
  /** Queues the script on `pipeline`, made from a client it was defined on. */
  queue(pipeline: ChainableCommander, ...args: Arg[]): void
}

/**
 * A Lua script run by its SHA (EVALSHA), through ioredis's `defineCommand`: its text
 * travels to a Redis (or a Cluster node) once, when that one answers NOSCRIPT, rather
 * than with every call. Defined on each client the first time it runs there.
 * `numberOfKeys` null: the keys vary, and each call gives their number first.
 */
export function redisScript<R>(name: string, lua: string, numberOfKeys: number | null): RedisScript<R> {
  const defined = new WeakSet<RedisClient>()
  const define = (redis: RedisClient): void => {
    if (defined.has(redis)) return
    redis.defineCommand(name, { numberOfKeys: numberOfKeys ?? undefined, lua })
    defined.add(redis)
  }
  const run = (redis: RedisClient, ...args: Arg[]): Promise<R> => {
    define(redis)
    return (redis as unknown as Record<string, (...a: Arg[]) => Promise<R>>)[name]!(...args)
  }
  return Object.assign(run, {
    define,
    queue(pipeline: ChainableCommander, ...args: Arg[]): void {
      ;(pipeline as unknown as Record<string, (...a: Arg[]) => unknown>)[name]!(...args)
    },
  })
}
