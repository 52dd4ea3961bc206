import { describe, expect, it } from 'vitest'
import { ShutdownWatch } from '../../src/platform/client/shutdown-watch.js'

// Every call in flight watches the platform client's shutdown: each watcher runs once,
// one that stopped watching never, one that starts watching after it at once.

describe('ShutdownWatch', () => {
  it('runs every watcher still watching once, with the reason, and a late one at once', () => {
    const watch = new ShutdownWatch()
    const seen: string[] = []
    const stops = Array.from({ length: 500 }, (_, i) => watch.watch((reason) => seen.push(`${i} ${reason.message}`)))
    for (let i = 0; i < 500; i += 2) stops[i]!()
    watch.shutDown(new Error('stopping'))
    watch.shutDown(new Error('again'))
    expect(seen).toHaveLength(250)
    expect(seen.every((line) => line.endsWith(' stopping') && Number(line.split(' ')[0]) % 2 === 1)).toBe(true)
    expect(watch.reason?.message).toBe('stopping')
    let late: Error | null = null
    watch.watch((reason) => (late = reason))
    expect(late).toBe(watch.reason)
  })
})
