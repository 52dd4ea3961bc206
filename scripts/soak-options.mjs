/**
 * The soak's options (scripts/soak.mjs: --minutes, --rate, --sample, --chaos, --rolling, --seed,
 * --faults, --keep-logs), what follows from them (the request count, the bounds), and the
 * chaos run's targets. A bad option stops the run here, before anything is started.
 */
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { FAULTS } from './soak-faults.mjs'
import { imageMemoryEnv } from './image-env.mjs'

export const ROOT = fileURLToPath(new URL('../', import.meta.url))
export const PROBE = pathToFileURL(join(ROOT, 'scripts/soak-probe.mjs')).href
// The replicas run with the image's memory settings (the Dockerfile's ENV NODE_OPTIONS and
// MALLOC_* lines): the young generation's size and the allocator's threshold decide much
// of a replica's RSS.
export const IMAGE_MEMORY_ENV = imageMemoryEnv(join(ROOT, 'Dockerfile'))

export const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '1' },
    rate: { type: 'string' },
    sample: { type: 'string' },
    chaos: { type: 'boolean', default: false },
    rolling: { type: 'boolean', default: false },
    seed: { type: 'string' },
    'keep-logs': { type: 'string' },
    faults: { type: 'string' },
  },
})
export const CHAOS = args.chaos
export const ROLLING = args.rolling
export const MINUTES = Number(args.minutes)
export const RATE = Number(args.rate ?? (CHAOS ? 60 : ROLLING ? 100 : 30))
export const SEED = args.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(args.seed)
if (!(MINUTES > 0 && MINUTES <= 24 * 60) || !(RATE > 0 && RATE <= 2000) || !Number.isSafeInteger(SEED) || (CHAOS && ROLLING)) {
  console.error('usage: npm run soak -- --minutes N [--rate R] [--sample S] [--chaos | --rolling] [--seed K] [--faults a,b] [--keep-logs DIR]   (0 < N <= 1440, 0 < R <= 2000, K an integer)')
  process.exit(2)
}
// --faults a,b: only the faults whose names hold one of these words (to look into one).
export const CHOSEN_FAULTS = args.faults ? FAULTS.filter((f) => args.faults.split(',').some((word) => f.name.includes(word.trim()))) : FAULTS
if (CHOSEN_FAULTS.length === 0) {
  console.error(`--faults ${args.faults}: no fault's name holds any of these (${FAULTS.map((f) => f.name).join('; ')})`)
  process.exit(2)
}
export const SAMPLE_S = Number(args.sample ?? Math.min(60, Math.max(5, Math.round((MINUTES * 60) / 20))))
export const TOTAL = Math.floor(MINUTES * 60 * RATE)
export const MAX_IN_FLIGHT = CHAOS ? 256 : 64
export const REQUEST_TIMEOUT_MS = 10_000
export const HARD_LIMIT_MS = (MINUTES + (CHAOS ? 5 : 2)) * 60_000
export const PLATFORM_LATENCY_MS = 20

// The chaos targets (see the top of this file).
export const RECOVERY_TARGET_S = 5
// Errors are compared with the baseline over windows this long: a second of 503s from a
// pause the platform's random 429s bring about is the baseline, not a fault lasting.
export const RECOVERY_WINDOW_S = 5
export const SEAT_LEASE_S = 5
export const RSS_GROWTH = 0.2
export const RSS_AFTER_S = 60
// Calm stretches, which set the baseline error rate: from BASELINE_FROM_S to the first
// fault, and from CALM_AFTER_S after each fault's end to the next.
export const BASELINE_FROM_S = 5
export const CALM_AFTER_S = 15
export const LONG_RUN_S = 600
