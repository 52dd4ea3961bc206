import { hash } from 'node:crypto'
import { stableStringify } from './stable-stringify.js'
import type { CanonicalReport } from './report-query.js'
import { redisKey } from '../redis/keys.js'

/**
 * The cache key of a report for one platform credential and the account its token acts
 * for (TokenProvider.account): a credential moved to another account (a rollout of
 * another customer's token under the same name) reads none of the first account's copies.
 * Only a hash of a stable serialization goes into the key: joining raw parameter strings
 * would let two different requests (`a=1&b=2` vs `a=1%26b%3D2`) collide.
 */
export function reportCacheKey(
  input: { credential: string; account: string; report: CanonicalReport },
  opts: { prefix: string; version: number },
): string {
  const { credential, account, report } = input
  const material = stableStringify({
    credential,
    account,
    method: report.method,
    path: report.path,
    keyMaterial: report.keyMaterial,
  })
  // One call, no Hash object: the key is made at every read.
  const digest = hash('sha256', material, 'base64url')
  return redisKey.report(opts.prefix, opts.version, digest)
}
