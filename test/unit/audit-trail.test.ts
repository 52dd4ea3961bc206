import { spawn } from 'node:child_process'
import { Writable } from 'node:stream'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { AuditTrail, auditLog } from '../../src/access/audit-trail.js'
import { SecretSet, loggerOptions } from '../../src/observe/logger.js'
import { ensureBuilt } from '../helpers/dist.js'
import { waitFor } from '../helpers/wait.js'

const TRAIL = fileURLToPath(new URL('../../dist/access/audit-trail.js', import.meta.url))

function capture(): { written: string[]; dest: Writable } {
  const written: string[] = []
  const dest = new Writable({
    write(chunk: Buffer, _enc, done) {
      written.push(chunk.toString())
      done()
    },
  })
  return { written, dest }
}

describe('AuditTrail', () => {
  it('keeps the last audit lines, newest first, and passes every line on', () => {
    const { written, dest } = capture()
    const trail = new AuditTrail(2)
    const log = pino({ base: null }, trail.tee(dest))
    log.info({ kind: 'audit', action: 'purge', n: 1 }, 'one')
    log.info({ kind: 'request' }, 'not audit')
    log.info({ kind: 'audit', action: 'purge', n: 2 }, 'two')
    log.warn({ kind: 'audit', action: 'admin-auth', n: 3 }, 'three')
    expect(written).toHaveLength(4)
    // The refused call's line is kept apart from the operators' (each kind its last 2).
    expect(trail.lines().map((l) => l.n)).toEqual([3, 2, 1])
  })

  it('keeps a team\'s write\'s request id that may hold a webhook secret [REDACTED] whole, whatever it is', () => {
    const trail = new AuditTrail(5)
    trail.keepWrite({ reqId: 'trace.[REDACTED].7' }, 'write call')
    trail.keepWrite({ reqId: 'trace.Qm9vK2Zvb3JhbmFyYmF6cXV4.7' }, 'write call')
    trail.keepWrite({ reqId: '9f0293ab-7b2f-4e17-97a1-eed0bf8036d9' }, 'write call')
    expect(trail.lines().map((l) => l.reqId)).toEqual(['9f0293ab-7b2f-4e17-97a1-eed0bf8036d9', '[REDACTED]', '[REDACTED]'])
  })

  it('keeps a team\'s write as its own log writes it, a login\'s short secret as sent and every other secret [REDACTED], and not the log\'s line of it, which writes that one [REDACTED] too', () => {
    const secrets = new SecretSet()
    secrets.add('a-configured-secret-0001')
    secrets.addLogOnly('Summer2026')
    const { written, dest } = capture()
    const trail = new AuditTrail(5, secrets)
    const log = pino(loggerOptions('info', secrets), trail.tee(dest))
    const line = { action: 'write', team: 'writer', path: '/api/v1/x-Summer2026/a-configured-secret-0001', accounts: ['Summer2026'], reqId: 'id-Summer2026' }
    auditLog(log).info(line, 'write call')
    trail.keepWrite(line, 'write call')
    expect(trail.lines()).toHaveLength(1)
    expect(trail.lines()[0]).toMatchObject({ kind: 'audit', level: 30, msg: 'write call', ...line, path: '/api/v1/x-Summer2026/[REDACTED]' })
    expect(written).toHaveLength(1)
    expect(written[0]).toContain('"path":"/api/v1/x-[REDACTED]/[REDACTED]"')
    expect(written[0]).not.toContain('Summer2026')
  })

  it('keeps a team\'s write at the time its log\'s line of it says, not at a clock read apart', () => {
    const { dest } = capture()
    const trail = new AuditTrail(5)
    const log = pino({ base: null, timestamp: () => ',"time":1000' }, trail.tee(dest))
    const line = { action: 'write', team: 'writer', n: 1 }
    auditLog(log).info(line, 'write call')
    trail.keepWrite(line, 'write call')
    // A write the log did not pass through the trail is kept at the trail's own clock.
    trail.keepWrite({ ...line, n: 2 }, 'write call')
    expect(trail.lines().map((l) => [l.n, l.time === 1000])).toEqual([[2, false], [1, true]])
  })

  it('keeps no line whose "kind":"audit" is inside a value of its own', () => {
    const { dest } = capture()
    const trail = new AuditTrail(2)
    const log = pino({ base: null }, trail.tee(dest))
    log.info({ kind: 'audit', n: 1 }, 'one')
    log.info({ advertiser: { kind: 'audit', msg: 'forged' } }, 'request')
    log.info({ kind: 'request', advertiser: [{ kind: 'audit' }] }, 'request')
    expect(trail.lines().map((l) => l.n)).toEqual([1])
  })

  it('keeps the last lines of teams\' writes apart from the others: writes push out writes only, and the answer is newest first across both', () => {
    const { dest } = capture()
    const trail = new AuditTrail(2)
    const log = pino({ base: null }, trail.tee(dest))
    log.info({ kind: 'audit', action: 'purge', n: 1 }, 'purged')
    log.warn({ kind: 'audit', action: 'admin-auth', n: 2 }, 'refused')
    log.info({ kind: 'audit', action: 'purge', n: 3 }, 'purged')
    for (let n = 4; n <= 8; n++) trail.keepWrite({ team: 'growth', n }, 'write')
    log.info({ kind: 'audit', action: 'log-level', n: 9 }, 'level')
    expect(trail.lines().map((l) => l.n)).toEqual([9, 8, 7, 3, 2])
  })

  it('keeps refused admin calls apart from the others: a flood of refusals pushes out refusals only', () => {
    const { dest } = capture()
    const trail = new AuditTrail(2)
    const log = pino({ base: null }, trail.tee(dest))
    log.info({ kind: 'audit', action: 'purge', n: 1 }, 'purged')
    log.info({ kind: 'audit', action: 'log-level', n: 2 }, 'level')
    for (let n = 3; n <= 8; n++) log.warn({ kind: 'audit', action: 'admin-auth', outcome: n % 2 ? 'forbidden' : 'refused', n }, 'refused')
    expect(trail.lines().map((l) => l.n)).toEqual([8, 7, 2, 1])
  })
})

describe('auditLog', () => {
  it('writes its lines at info whatever level the log is set to, through the log\'s redaction and scrubbing', () => {
    const { written, dest } = capture()
    const secrets = new SecretSet()
    secrets.add('a-configured-secret-0001')
    const log = pino(loggerOptions('info', secrets), dest)
    const audit = auditLog(log)
    for (const level of ['error', 'silent', 'debug', 'info'] as const) {
      log.level = level
      audit.info({ action: 'purge', token: 'a-token-0001', reason: 'a-configured-secret-0001 seen' }, level)
      audit.debug('never: the audit log is held at info')
    }
    const lines = written.map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(lines.map((l) => [l.level, l.kind, l.msg])).toEqual(['error', 'silent', 'debug', 'info'].map((msg) => [30, 'audit', msg]))
    expect(lines.map((l) => [l.token, l.reason])).toEqual(Array(4).fill(['[REDACTED]', '[REDACTED] seen']))
  })
})

describe('AuditTrail.tee to stdout', () => {
  // A reader of stdout gone (journald restarted, a dead pipe): the first line after it meets
  // EPIPE, and pino makes every later write a no-op. A flush asked then calls back with the
  // failure at once: main.ts exits on that callback, else at its bound (1 s) only.
  it('calls a flush back once stdout has met EPIPE, however long before the flush it did', async () => {
    ensureBuilt(TRAIL)
    const script = [
      `const { AuditTrail } = await import(${JSON.stringify(pathToFileURL(TRAIL).href)})`,
      'const tee = new AuditTrail().tee()',
      "process.stdin.once('data', async () => {",
      // pino's no-op write (undefined, not a boolean) says the EPIPE was met.
      "  while (tee.write('{\"msg\":\"a line\"}\\n') !== undefined) await new Promise((r) => setImmediate(r))",
      "  tee.flush((err) => { process.stderr.write(`flushed: ${err?.code ?? 'written'}`); process.exit(0) })",
      '})',
    ].join('\n')
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'pipe'] })
    let said = ''
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (said += chunk))
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
    try {
      child.stdout.destroy()
      child.stdin.write('go\n')
      await waitFor(() => `the flush's callback:\n${said}`, () => child.exitCode !== null)
      expect([await exited, said]).toEqual([0, 'flushed: EPIPE'])
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL')
    }
  }, 15_000)
})
