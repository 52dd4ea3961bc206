import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { RENAMED_SETTINGS, RETIRED_SETTINGS } from '../../src/config/setting-moves.js'

// What an operator upgrading reads (docs/operations/upgrade.md) names each setting this
// release renamed or retired: the renames were told in the contract's additions alone.
const page = readFileSync(new URL('../../docs/operations/upgrade.md', import.meta.url), 'utf8')

describe('docs/operations/upgrade.md', () => {
  it.each(RENAMED_SETTINGS.map(([from, to]) => [from.join('.'), to.join('.')]))('names the renamed setting %s and its new name %s', (from, to) => {
    expect(page).toContain(`\`${from}\``)
    expect(page).toContain(`\`${to}\``)
  })

  it.each(RETIRED_SETTINGS.map(([path]) => [path.join('.')]))('names the retired setting %s', (path) => {
    expect(page).toContain(`\`${path}\``)
  })

  it('names the deprecated metrics and status field with the names that replace them', () => {
    for (const name of ['gateway_platform_permits_held', 'gateway_platform_seats_held', 'gateway_platform_permits_lost_total', 'gateway_platform_seats_lost_total', 'permitsHeld', 'seatsHeld']) expect(page).toContain(`\`${name}\``)
  })
})
