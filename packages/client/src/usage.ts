// What an answer cost, as its `platform-usage` header says it (a report answer, a failed read).

/**
 * What a report answer cost (its `platform-usage` header), in platform-seconds: the time
 * calls held the platform. `fill`: the call that filled this answer (0 from the cache);
 * `minute`, `day`: the team's last 60 s and UTC day; `share`: the minute as a percentage of
 * the team's share; `dayLimit`: its bound a day; `reset`: seconds until the UTC day ends.
 */
export interface PlatformUsage {
  fill: number
  minute: number
  share: number | null
  day: number
  dayLimit: number | null
  reset: number
}

/** The `platform-usage` dictionary (`fill=0.412, minute=3.250, …`) as numbers; null when absent or not one. */
export function platformUsageOf(header: string | null): PlatformUsage | null {
  if (header === null) return null
  const members = new Map<string, number>()
  for (const member of header.split(',')) {
    const [name, value] = member.trim().split('=')
    const number = Number(value)
    if (name && value !== undefined && Number.isFinite(number)) members.set(name, number)
  }
  const fill = members.get('fill')
  const minute = members.get('minute')
  const day = members.get('day')
  const reset = members.get('reset')
  if (fill === undefined || minute === undefined || day === undefined || reset === undefined) return null
  return { fill, minute, share: members.get('share') ?? null, day, dayLimit: members.get('day-limit') ?? null, reset }
}
