// Dates travel as `YYYY-MM-DD` and are computed as whole UTC days since the
// epoch, so that a day range is a plain integer range and hashes stay integers.

const DAY_MS = 86_400_000
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/

/** The day number of a real calendar date, or undefined (2026-02-30 is not one). */
export function parseIsoDay(text: string): number | undefined {
  const match = ISO_DATE.exec(text)
  if (match === null) return undefined
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])]
  const date = new Date(Date.UTC(year, month - 1, day))
  const roundTrips = date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day
  return roundTrips ? date.getTime() / DAY_MS : undefined
}

export function formatIsoDay(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10)
}

/** 0 = Sunday … 6 = Saturday; day 0 (1970-01-01) was a Thursday. */
export function weekday(day: number): number {
  return (day + 4) % 7
}
