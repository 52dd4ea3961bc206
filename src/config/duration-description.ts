// Apart from schema.ts, which loads TypeBox: bare-durations.ts reads it at every start.

/** What every duration setting's schema says of itself: how bare-durations.ts finds them. */
export const DURATION_DESCRIPTION = 'milliseconds as a number, or a string such as 500ms, 30s, 5m, 24h, 7d'
