import { Writable } from 'node:stream'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { AuditTrail } from '../../src/access/audit-trail.js'

describe('AuditTrail', () => {
  it('keeps the last audit lines, newest first, and passes every line on', () => {
    const written: string[] = []
    const dest = new Writable({
      write(chunk: Buffer, _enc, done) {
        written.push(chunk.toString())
        done()
      },
    })
    const trail = new AuditTrail(2)
    const log = pino({ base: null }, trail.tee(dest))
    log.info({ kind: 'audit', action: 'purge', n: 1 }, 'one')
    log.info({ kind: 'request' }, 'not audit')
    log.info({ kind: 'audit', action: 'purge', n: 2 }, 'two')
    log.warn({ kind: 'audit', action: 'admin-auth', n: 3 }, 'three')
    expect(written).toHaveLength(4)
    expect(trail.lines().map((l) => l.n)).toEqual([3, 2])
  })
})
