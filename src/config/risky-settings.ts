import type { TeamConfig } from './teams.js'

/**
 * Settings that open a door the defaults keep shut, said as one warning line at start and
 * at each teams reload applied, so that an operator who chose one sees what it allows.
 */

/**
 * The warning of `ownership.creativeSets.check: pass` while a team limited to some
 * advertisers may write: a set id does not say whose it is, so such a team may attach
 * any advertiser's creative sets; null when nothing of that holds. Names teams only.
 */
export function creativeSetsPassWarning(check: 'refuse' | 'lookup' | 'pass', teams: readonly Pick<TeamConfig, 'name' | 'advertisers' | 'write'>[]): string | null {
  if (check !== 'pass') return null
  const writers = teams.filter((t) => t.advertisers !== null && t.write).map((t) => t.name)
  if (writers.length === 0) return null
  return `ownership.creativeSets.check is pass: a team limited to some advertisers may attach any advertiser's creative sets (creativeSetIds are sent unchecked; scoped teams that may write: ${writers.join(', ')}); set check: lookup (with listPath) to check them, or refuse`
}
