import { hash } from 'node:crypto'
import { stableStringify } from './stable-stringify.js'
import type { CanonicalReport } from './report-query.js'
import { redisKey } from '../redis/keys.js'

/**
 * The cache key of a report for one platform credential. Only a hash of a stable
 * serialization goes into the key: joining raw parameter strings would let two
 * different requests (`a=1&b=2` vs `a=1%26b%3D2`) collide.
 */
export function reportCacheKey(
  input: { credential: string; report: CanonicalReport },
  opts: { prefix: string; version: number },
): string {
  const { credential, report } = input
  const material = stableStringify({
    credential,
    method: report.method,
    path: report.path,
    keyMaterial: report.keyMaterial,
  })
  // One call, no Hash object: the key is made at every read.
  const digest = hash('sha256', material, 'base64url')
  return redisKey.report(opts.prefix, opts.version, digest)
}
