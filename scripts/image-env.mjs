/**
 * The memory settings the image runs the gateway with: the runtime stage's `ENV
 * NODE_OPTIONS=…` and `ENV MALLOC_…=…` lines of the Dockerfile. The soak's replicas and
 * test/slow/answer-memory.test.ts run with them, so what they measure is what a pod holds.
 */
import { readFileSync } from 'node:fs'

const MEMORY_ENV = /^ENV ((?:NODE_OPTIONS|MALLOC_\w+)=\S+)\s*$/gm

/** The image's memory settings, read from the Dockerfile at `path`. */
export function imageMemoryEnv(path) {
  const env = {}
  for (const [, pair] of readFileSync(path, 'utf8').matchAll(MEMORY_ENV)) {
    const at = pair.indexOf('=')
    env[pair.slice(0, at)] = pair.slice(at + 1)
  }
  if (env.NODE_OPTIONS === undefined) throw new Error(`${path} has no ENV NODE_OPTIONS=<options> line for the gateway to run with`)
  return env
}
