import type { CredentialSeats } from '../../src/platform/governor/seats.js'
import type { GovernorView, PlatformGovernors } from '../../src/platform/governor/platform-governors.js'

/** One credential's governor as the status view reads it (platform-governors.ts views()). */
export function governorView(gw: { governors: PlatformGovernors }, credential = 'default'): GovernorView {
  const view = gw.governors.views().find((v) => v.credential === credential)
  if (!view) throw new Error(`no governor for credential ${credential}`)
  return view
}

/** The live seats of one credential of a gateway: its limit, calls in flight and queued, per team. */
export function seatsOf(gw: { governors: PlatformGovernors }, credential = 'default'): CredentialSeats {
  return governorView(gw, credential).seats
}
