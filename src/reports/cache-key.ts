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
  input: { credential: string; account: string | null; report: CanonicalReport },
  opts: { prefix: string; version: number },
): string {
  const { credential, account, report } = input
  const named = { credential, method: report.method, path: report.path, keyMaterial: report.keyMaterial }
  // `account` null: the key of the release before (no account in it), which report jobs asked before the upgrade hold.
  const material = stableStringify(account === null ? named : { ...named, account })
  // One call, no Hash object: the key is made at every read.
  const digest = hash('sha256', material, 'base64url')
  return redisKey.report(opts.prefix, opts.version, digest)
}
