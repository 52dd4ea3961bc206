/**
 * The team the gateway's own platform calls (ownership lookups, the token probe) count
 * under, in usage and in the governor's seats and queue: they are made for no
 * caller's answer alone. Not a team name a config can hold (those are letters, digits,
 * `_ . -`), so no team can take its share or its totals.
 */
export const GATEWAY_TEAM = '(gateway)'
