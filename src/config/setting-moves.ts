// Settings a CONFIG_FILE may still name by a former name, or that no longer have an
// effect, until the next release: src/config.ts takes them with a warning, and the chart's
// schema (scripts/chart-config-schema.mjs, which node reads without a build) accepts them too.

/** Settings renamed this release, old name → new: the old name is still taken, with a warning, until the next. */
export const RENAMED_SETTINGS: ReadonlyArray<[string[], string[]]> = [[['platform', 'permitLease'], ['platform', 'seatLease']]]

/** Settings retired this release, with what a file that still sets one is told: taken and ignored until the next. */
export const RETIRED_SETTINGS: ReadonlyArray<[string[], string]> = [
  [['platform', 'bufferBytes'], 'every answer is received whole within platform.bufferTotalBytes, the one budget of the answers on their way to callers'],
]
