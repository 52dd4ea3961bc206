import { Command } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { CHECKED_IOREDIS_MINOR, installIoredisCommandTimeoutPatch, installedIoredisVersion } from '../../src/redis/command-timeout.js'

// The command timeout patch goes only on the ioredis it was checked with: the same minor
// version, and a Command with the methods and fields the patch relies on.

function warnings() {
  const lines: { fields: Record<string, unknown>; msg: string }[] = []
  return { lines, log: { warn: (fields: Record<string, unknown>, msg: string) => void lines.push({ fields, msg }) } }
}

/** A stand-in for ioredis's Command, as the patch expects it. */
function fakeCommand() {
  return class FakeCommand {
    isResolved = false
    _commandTimeoutTimer?: NodeJS.Timeout
    resolve = (_reply: unknown): void => {
      this._clearTimers()
      this.isResolved = true
    }
    reject = (_err: Error): void => this._clearTimers()
    constructor(readonly name: string) {}
    setTimeout(_ms: number): void {}
    _clearTimers(): void {
      if (this._commandTimeoutTimer) clearTimeout(this._commandTimeoutTimer)
      delete this._commandTimeoutTimer
    }
  }
}

const VERSION = `${CHECKED_IOREDIS_MINOR}.0`

describe('installIoredisCommandTimeoutPatch', () => {
  it('passes the installed ioredis: the version it was checked with, and the shape it relies on', () => {
    const { lines, log } = warnings()
    expect(installedIoredisVersion().startsWith(`${CHECKED_IOREDIS_MINOR}.`)).toBe(true)
    expect(installIoredisCommandTimeoutPatch(log)).toBe(true)
    expect(lines).toEqual([])
    // The patch's, whether this call or another file of the worker (a gateway built) put it
    // there: its timer waits for the replies already received (setImmediate), ioredis' own does not.
    expect(String(Command.prototype.setTimeout)).toContain('setImmediate')
    // Once: a second call changes nothing.
    const patched = Command.prototype.setTimeout
    expect(installIoredisCommandTimeoutPatch(log)).toBe(true)
    expect(Command.prototype.setTimeout).toBe(patched)
  })

  it('patches a Command that has everything it relies on', () => {
    const Fake = fakeCommand()
    const own = Fake.prototype.setTimeout
    const { lines, log } = warnings()
    expect(installIoredisCommandTimeoutPatch(log, { Command: Fake, version: VERSION })).toBe(true)
    expect(lines).toEqual([])
    expect(Fake.prototype.setTimeout).not.toBe(own)
  })

  it('leaves a Command without _clearTimers unpatched, with one warning', () => {
    const Fake = fakeCommand()
    const own = Fake.prototype.setTimeout
    Object.defineProperty(Fake.prototype, '_clearTimers', { value: undefined })
    const { lines, log } = warnings()
    expect(installIoredisCommandTimeoutPatch(log, { Command: Fake, version: VERSION })).toBe(false)
    expect(Fake.prototype.setTimeout).toBe(own)
    expect(lines).toHaveLength(1)
    expect(lines[0]?.fields).toMatchObject({ ioredis: VERSION, checked: CHECKED_IOREDIS_MINOR, mismatch: 'Command.prototype._clearTimers is not a function' })
    expect(lines[0]?.msg).toMatch(/unpatched/)
    // Once: a second call neither patches nor warns again.
    expect(installIoredisCommandTimeoutPatch(log, { Command: Fake, version: VERSION })).toBe(false)
    expect(lines).toHaveLength(1)
  })

  it('leaves a Command whose answer keeps its timer, or that has no isResolved, unpatched', () => {
    const Keeps = fakeCommand()
    Object.defineProperty(Keeps.prototype, '_clearTimers', { value: () => undefined })
    const Unflagged = class extends fakeCommand() {
      constructor(name: string) {
        super(name)
        delete (this as Partial<{ isResolved: boolean }>).isResolved
      }
    }
    const { lines, log } = warnings()
    expect(installIoredisCommandTimeoutPatch(log, { Command: Keeps, version: VERSION })).toBe(false)
    expect(installIoredisCommandTimeoutPatch(log, { Command: Unflagged, version: VERSION })).toBe(false)
    expect(lines.map((l) => l.fields.mismatch)).toEqual(["an answered Command keeps its _commandTimeoutTimer", "a new Command's isResolved is not false"])
  })

  it('leaves another ioredis minor version unpatched, with a warning, whatever its shape', () => {
    const Fake = fakeCommand()
    const own = Fake.prototype.setTimeout
    const { lines, log } = warnings()
    const [major, minor] = CHECKED_IOREDIS_MINOR.split('.').map(Number) as [number, number]
    const other = `${major}.${minor + 1}.0`
    expect(installIoredisCommandTimeoutPatch(log, { Command: Fake, version: other })).toBe(false)
    expect(Fake.prototype.setTimeout).toBe(own)
    expect(lines).toHaveLength(1)
    expect(lines[0]?.fields).toMatchObject({ ioredis: other, checked: CHECKED_IOREDIS_MINOR })
  })
})
