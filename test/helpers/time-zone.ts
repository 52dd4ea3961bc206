/**
 * Runs `check` with the process's time zone set to `zone` (Node reads TZ afresh on each
 * local-time call), then puts TZ back as it was: a reading of HTTP dates tested where local
 * time is not UTC.
 */
export function inTimeZone(zone: string, check: () => void): void {
  const before = process.env.TZ
  try {
    process.env.TZ = zone
    check()
  } finally {
    if (before === undefined) delete process.env.TZ
    else process.env.TZ = before
  }
}
