// Durations and sizes of the configuration: a number, or a string with its unit.

export const DURATION_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }
export const SIZE_UNITS: Readonly<Record<string, number>> = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 }

const DURATION = /^(\d+)(ms|s|m|h|d)$/

/** Whether `value` is a duration parseDuration reads: a whole number of milliseconds, or a whole number and its unit. */
export function isDuration(value: unknown): value is number | string {
  return (typeof value === 'number' && Number.isInteger(value) && value >= 0) || (typeof value === 'string' && DURATION.test(value))
}

export function parseDuration(value: number | string): number {
  if (typeof value === 'number') return value
  const match = DURATION.exec(value)
  if (!match) throw new Error(`not a duration: ${value}`)
  return Number(match[1]) * (DURATION_UNITS[match[2] as string] as number)
}

export function parseSize(value: number | string): number {
  if (typeof value === 'number') return value
  const match = /^(\d+)(B|KiB|MiB|GiB)$/.exec(value)
  if (!match) throw new Error(`not a size: ${value}`)
  return Number(match[1]) * (SIZE_UNITS[match[2] as string] as number)
}
