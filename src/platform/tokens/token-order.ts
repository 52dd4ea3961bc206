// The order of a credential's tokens across replicas. The shared record in Redis holds
// the token that ranks highest, a replica takes a token only when it ranks above its
// own, and the write script (token-store.ts) compares the same two numbers.
//
// A token's rank is [basis, version], compared in that order:
// - a change someone made (PUT /admin/token, POST /admin/token/refresh, the token file's
//   new content, a configuration rolled out with another token or login): its basis is
//   its version, when it was made, so the newest change wins;
// - a login the gateway makes itself (at start with no usable shared token, before the
//   token expires, after the platform refused it): its basis is the version of the token
//   it replaces (0 when it replaces none). It ranks just above that token, and below
//   anything set after that token: it never undoes an operator's rotation made
//   meanwhile, which it was not made to replace.
//
// Versions are milliseconds of Redis' clock as the replica that made the change read it
// (redis/redis-clock.ts; its own clock without Redis; the provider's versionNow), raised past the version it
// replaced (token-provider.ts): replicas whose clocks disagree still order their changes
// by when they were made.

export interface Ranked {
  basis: number
  version: number
}

/** > 0 when `a` ranks above `b`, < 0 below it, 0 when both are the same rank. */
export function compareRank(a: Ranked, b: Ranked): number {
  if (a.basis !== b.basis) return a.basis > b.basis ? 1 : -1
  if (a.version !== b.version) return a.version > b.version ? 1 : -1
  return 0
}

/** The basis of a login the gateway makes itself, replacing `replaced` (null: none). */
export function loginBasis(replaced: Ranked | null): number {
  return replaced?.version ?? 0
}

/**
 * The rank of a change made at `now` that ranks above `above`: what a token stored again
 * over a higher-ranked record takes (token-store.ts, a start of a configuration it replaced).
 */
export function rankAbove(above: Ranked, now: number): Ranked {
  const version = Math.max(now, above.version + 1, above.basis + 1)
  return { basis: version, version }
}
