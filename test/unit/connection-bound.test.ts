import { describe, expect, it } from 'vitest'
import { ClosedNotice, connectionBound, enforcedBound, openFileLimit, reservedFiles, WARN_EVERY_MS, type ClosedAtBound } from '../../src/http/connection-bound.js'

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max processes             63432                63432                processes
Max open files            20000                20000                files
Max locked memory         8388608              8388608              bytes
`

describe('a listener\'s connection bound', () => {
  it('reads the soft open-file limit of /proc/self/limits; none when unlimited or not stated', () => {
    expect(openFileLimit(LIMITS)).toBe(20000)
    expect(openFileLimit(LIMITS.replace('Max open files            20000', 'Max open files            unlimited'))).toBeNull()
    expect(openFileLimit('')).toBeNull()
  })

  it('keeps a quarter of the limit, at most 512, for the gateway\'s own files and connections', () => {
    expect(reservedFiles(20000)).toBe(512)
    expect(reservedFiles(256)).toBe(64)
  })

  it('is the setting, or half of what the open-file limit leaves past its reserve when that is fewer; the setting without a limit', () => {
    expect(connectionBound(4096, 20000)).toBe(4096)
    expect(connectionBound(128, 20000)).toBe(128)
    expect(connectionBound(20000, 20000)).toBe(9744)
    expect(connectionBound(4096, 1024)).toBe(384)
    expect(connectionBound(4096, 256)).toBe(96)
    expect(connectionBound(128, 256)).toBe(96)
    expect(connectionBound(4096, 1)).toBe(1)
    expect(connectionBound(4096, null)).toBe(4096)
  })
})

// The connections a listener's bound closed are said in one warn line a minute at most:
// the first at once, then those since the last line, by which.

describe('ClosedNotice', () => {
  it('says the first closing at once, then nothing within a minute, then every one since the last line by which', () => {
    const notice = new ClosedNotice()
    expect(notice.note('idle', 2, 1000)).toEqual({ idle: 2, busy: 0, new: 0 })
    expect(notice.note('new', 1, 1001)).toBeNull()
    expect(notice.note('idle', 3, 1000 + WARN_EVERY_MS - 2)).toBeNull()
    expect(notice.note('busy', 4, 1000 + WARN_EVERY_MS - 1)).toBeNull()
    expect(notice.note('new', 1, 1000 + WARN_EVERY_MS)).toEqual({ idle: 3, busy: 4, new: 2 })
    expect(notice.note('new', 1, 1000 + 3 * WARN_EVERY_MS)).toEqual({ idle: 0, busy: 0, new: 1 })
  })
})

describe('enforcedBound', () => {
  it('holds the bound under the open-file limit, counts each closing and logs a line a minute at most', () => {
    const counted: [ClosedAtBound, number][] = []
    const lines: Record<string, unknown>[] = []
    let now = 0
    const bound = enforcedBound(
      { listener: 'admin', setting: 'admin.maxConnections', max: 128, closed: (which, count) => counted.push([which, count]) },
      256,
      { warn: (fields: Record<string, unknown>) => lines.push(fields) } as never,
      () => now,
    )
    expect(bound.max).toBe(96)
    bound.closed('idle', 12)
    now = 10
    bound.closed('new', 1)
    expect(counted).toEqual([['idle', 12], ['new', 1]])
    expect(lines).toEqual([{ listener: 'admin', maxConnections: 96, closedIdle: 12, closedBusy: 0, closedNew: 0 }])
    now = WARN_EVERY_MS
    bound.closed('idle', 12)
    expect(lines[1]).toEqual({ listener: 'admin', maxConnections: 96, closedIdle: 12, closedBusy: 0, closedNew: 1 })
  })
})
