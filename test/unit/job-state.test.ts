import { describe, expect, it } from 'vitest'
import {
  cancellable, dropAt, endJob, EXPIRED_KEPT_MS, figuresAt, heldResultBytes, jobStatus, keptAnswer, newJob, placeInQueue, PLATFORM_ANSWER, renewJob, requeueJob, startable, startJob, startOrder, stateAt, type Job,
} from '../../src/jobs/job.js'
import { canonicalGetReport } from '../../src/reports/report-query.js'
import { fakeClock } from '../helpers/clock.js'

// Every transition of a report job (src/jobs/job.ts) at the times a fake clock gives.

const report = canonicalGetReport('/api/v1/report/campaigns/get', 'advertiserId=101&dateFrom=2026-01-01&dateTo=2026-12-31', { maxRangeDays: 400 })
const LEASE = 15_000
const KEEP = 60 * 60_000

function asked(clock: { now(): number }, id = 'j1', team = 'growth'): Job {
  return newJob({ id, team, credential: 'default', key: 'k', report, expectedSeconds: 12.5 }, clock.now())
}

const FINALITY = { settledThrough: '2026-01-06', provisionalDays: '2026-01-07/2026-01-10' }
const NO_FINALITY = { settledThrough: null, provisionalDays: null }

describe('report job states', () => {
  it('queued → running → done → expired → dropped, each at its time', () => {
    const clock = fakeClock(Date.UTC(2026, 10, 1))
    const job = asked(clock)
    expect(stateAt(job, clock.now())).toBe('queued')
    expect(startable(job, clock.now())).toBe(true)
    clock.advance(1000)
    const running = startJob(job, 'r1', clock.now(), LEASE) as Job
    expect(running).toMatchObject({ state: 'running', runner: 'r1', runs: 1, startedAt: clock.now(), leaseUntil: clock.now() + LEASE })
    // Its lease holds: nobody else may start it.
    expect(startJob(running, 'r2', clock.now() + LEASE - 1, LEASE)).toBeNull()
    clock.advance(5000)
    const done = endJob(running, { runner: 'r1', runs: 1 }, clock.now(), { kind: 'done', resultBytes: 300, tookSeconds: 4.2, fetchedAt: clock.now() }, KEEP) as Job
    expect(done).toMatchObject({ state: 'done', endedAt: clock.now(), expiresAt: clock.now() + KEEP, resultBytes: 300, tookSeconds: 4.2, runner: null })
    expect(startable(done, clock.now() + LEASE)).toBe(false)
    clock.advance(KEEP - 1)
    expect(stateAt(done, clock.now())).toBe('done')
    expect(heldResultBytes([done], clock.now())).toBe(300)
    clock.advance(1)
    expect(stateAt(done, clock.now())).toBe('expired')
    expect(heldResultBytes([done], clock.now())).toBe(0)
    expect(dropAt(done)).toBe(clock.now() + EXPIRED_KEPT_MS)
  })

  it('judges its finality at its figures\' fetch: a copy filled before it ran, its end when it kept none (or a record of the release before), now while open', () => {
    const clock = fakeClock(Date.UTC(2026, 2, 10, 23, 59, 50))
    const job = asked(clock)
    expect(figuresAt(job, clock.now() + 1)).toBe(clock.now() + 1)
    const filled = clock.now()
    const running = startJob(job, 'r1', clock.now(), LEASE) as Job
    expect(figuresAt(running, clock.now() + 1)).toBe(clock.now() + 1)
    clock.advance(20_000)
    const done = endJob(running, { runner: 'r1', runs: 1 }, clock.now(), { kind: 'done', resultBytes: 1, tookSeconds: 0, fetchedAt: filled }, KEEP) as Job
    expect(figuresAt(done, clock.now() + 1)).toBe(filled)
    const failed = endJob(running, { runner: 'r1', runs: 1 }, clock.now(), { kind: 'failed', error: { code: 'GW_UPSTREAM', statusCode: 502, message: 'the platform failed' }, tookSeconds: 0 }, KEEP) as Job
    expect(figuresAt(failed, clock.now() + 1)).toBe(clock.now())
    const { fetchedAt: _, ...before } = done
    expect(figuresAt(before, clock.now() + 1)).toBe(clock.now())
  })

  it('says the finality of a result that holds figures (a report, a 2xx kept), and none of one that holds none (a failure, a refusal or a 3xx kept)', () => {
    const clock = fakeClock()
    const run = { runner: 'r1', runs: 1 }
    const running = startJob(asked(clock), 'r1', clock.now(), LEASE) as Job
    const said = (job: Job) => {
      const { settledThrough, provisionalDays } = jobStatus(job, null, clock.now(), FINALITY)
      return { settledThrough, provisionalDays }
    }
    // Open: as a read now would fetch them.
    expect([said(asked(clock)), said(running)]).toEqual([FINALITY, FINALITY])
    const done = (platformAnswer?: { status: number; headers: Record<string, string> }) =>
      endJob(running, run, clock.now(), { kind: 'done', resultBytes: 1, tookSeconds: 1, fetchedAt: clock.now(), ...(platformAnswer ? { platformAnswer } : {}) }, KEEP) as Job
    expect([said(done()), said(done({ status: 200, headers: {} })), said(done({ status: 204, headers: {} }))]).toEqual([FINALITY, FINALITY, FINALITY])
    expect(said(done({ status: 302, headers: { location: '/elsewhere' } }))).toEqual(NO_FINALITY)
    const failed = (error: Job['error'] & object) => endJob(running, run, clock.now(), { kind: 'failed', error, tookSeconds: 1 }, KEEP) as Job
    expect(said(failed({ code: PLATFORM_ANSWER, message: 'refused', statusCode: 422, platformAnswer: { status: 422, headers: {} } }))).toEqual(NO_FINALITY)
    expect(said(failed({ code: 'GW_UPSTREAM', message: 'the platform failed', statusCode: 502 }))).toEqual(NO_FINALITY)
  })

  it('running → failed keeps the GW_* code and message, and names its result (the failure) until it expires', () => {
    const clock = fakeClock()
    const running = startJob(asked(clock), 'r1', clock.now(), LEASE) as Job
    clock.advance(2000)
    const error = { code: 'GW_UPSTREAM_TIMEOUT', message: 'the platform did not answer in time', statusCode: 504 }
    const failed = endJob(running, { runner: 'r1', runs: 1 }, clock.now(), { kind: 'failed', error, tookSeconds: 2 }, KEEP) as Job
    expect(failed).toMatchObject({ state: 'failed', error, tookSeconds: 2 })
    expect(jobStatus(failed, null, clock.now(), FINALITY)).toMatchObject({ ...NO_FINALITY, state: 'failed', error: { code: 'GW_UPSTREAM_TIMEOUT', message: error.message }, result: `/api/v1/jobs/${failed.id}/result` })
    clock.advance(KEEP)
    expect(jobStatus(failed, null, clock.now(), FINALITY)).toMatchObject({ state: 'expired', result: null })
  })

  it('running → failed with the platform\'s answer keeps it as its result: its bytes held until it expires, its status naming the code and status, never the answer', () => {
    const clock = fakeClock()
    const running = startJob(asked(clock), 'r1', clock.now(), LEASE) as Job
    // Its status and headers in the record; its body kept beside it (its compressed bytes counted).
    const body = Buffer.from('{"message":"The selected spent based is invalid."}')
    const answer = { status: 422, headers: { 'content-type': 'application/json' } }
    const error = { code: PLATFORM_ANSWER, message: 'the platform refused the report with 422', statusCode: 422, platformAnswer: answer }
    const failed = endJob(running, { runner: 'r1', runs: 1 }, clock.now(), { kind: 'failed', error, tookSeconds: 0.3, resultBytes: body.length }, KEEP) as Job
    expect(failed).toMatchObject({ state: 'failed', error, resultBytes: body.length })
    expect(heldResultBytes([failed], clock.now())).toBe(body.length)
    expect(jobStatus(failed, null, clock.now(), FINALITY).error).toEqual({ code: PLATFORM_ANSWER, message: error.message, statusCode: 422 })
    clock.advance(KEEP)
    expect(heldResultBytes([failed], clock.now())).toBe(0)
  })

  it('an ended job answers the platform\'s answer it kept as its result: its body beside its record, or in a record of the release before (answer, base64); a report or a gateway failure is no kept answer', () => {
    const clock = fakeClock()
    const run = { runner: 'r1', runs: 1 }
    const running = startJob(asked(clock), 'r1', clock.now(), LEASE) as Job
    const answer = { status: 200, headers: { 'cache-control': 'no-store' } }
    const done = endJob(running, run, clock.now(), { kind: 'done', resultBytes: 10, tookSeconds: 1, fetchedAt: clock.now(), platformAnswer: answer }, KEEP) as Job
    expect(keptAnswer(done)).toEqual({ answer, body: null })
    // What a replica of the release before reads: no `answer` of its own, so it answers the result beside as a report.
    expect(done.answer).toBeUndefined()
    const refusal = { status: 422, headers: {} }
    const failed = endJob(running, run, clock.now(), { kind: 'failed', error: { code: PLATFORM_ANSWER, message: 'refused', statusCode: 422, platformAnswer: refusal }, tookSeconds: 1 }, KEEP) as Job
    expect(keptAnswer(failed)).toEqual({ answer: refusal, body: null })
    expect(failed.error?.answer).toBeUndefined()
    const body = Buffer.from('{"rows":[]}')
    const before = { ...done, platformAnswer: undefined, answer: { ...answer, body: body.toString('base64') } }
    expect(keptAnswer(before)).toEqual({ answer, body })
    const refusedBefore = { ...failed, error: { code: PLATFORM_ANSWER, message: 'refused', statusCode: 422, answer: { ...refusal, body: body.toString('base64') } } }
    expect(keptAnswer(refusedBefore)).toEqual({ answer: refusal, body })
    expect(keptAnswer(endJob(running, run, clock.now(), { kind: 'done', resultBytes: 10, tookSeconds: 1, fetchedAt: clock.now() }, KEEP) as Job)).toBeNull()
    expect(keptAnswer(endJob(running, run, clock.now(), { kind: 'failed', error: { code: 'GW_UPSTREAM', message: 'x', statusCode: 502 }, tookSeconds: 1 }, KEEP) as Job)).toBeNull()
    expect(keptAnswer(running)).toBeNull()
  })

  it('a running job whose lease ran out is started again by another runner, and the first run may no longer renew, end or requeue it', () => {
    const clock = fakeClock()
    const first = startJob(asked(clock), 'r1', clock.now(), LEASE) as Job
    const run1 = { runner: 'r1', runs: 1 }
    clock.advance(LEASE / 3)
    const renewed = renewJob(first, run1, clock.now(), LEASE) as Job
    expect(renewed.leaseUntil).toBe(clock.now() + LEASE)
    clock.advance(LEASE - 1)
    expect(startJob(renewed, 'r2', clock.now(), LEASE)).toBeNull()
    clock.advance(1)
    const second = startJob(renewed, 'r2', clock.now(), LEASE) as Job
    expect(second).toMatchObject({ state: 'running', runner: 'r2', runs: 2 })
    expect(renewJob(second, run1, clock.now(), LEASE)).toBeNull()
    expect(endJob(second, run1, clock.now(), { kind: 'done', resultBytes: 1, tookSeconds: 0, fetchedAt: clock.now() }, KEEP)).toBeNull()
    expect(requeueJob(second, run1, clock.now())).toBeNull()
    // The same runner restarted is another run: its count differs.
    expect(renewJob(second, { runner: 'r2', runs: 1 }, clock.now(), LEASE)).toBeNull()
    expect(renewJob(second, { runner: 'r2', runs: 2 }, clock.now(), LEASE)).not.toBeNull()
  })

  it('running → queued (no seat in time): not started again before its retry time', () => {
    const clock = fakeClock()
    const running = startJob(asked(clock), 'r1', clock.now(), LEASE) as Job
    const queued = requeueJob(running, { runner: 'r1', runs: 1 }, clock.now() + 5000) as Job
    expect(queued).toMatchObject({ state: 'queued', runner: null, startedAt: null, runs: 1 })
    clock.advance(4999)
    expect(startJob(queued, 'r2', clock.now(), LEASE)).toBeNull()
    clock.advance(1)
    expect(startJob(queued, 'r2', clock.now(), LEASE)).toMatchObject({ state: 'running', runs: 2 })
  })

  it('only a queued job is cancellable', () => {
    const clock = fakeClock()
    const job = asked(clock)
    expect(cancellable(job)).toBe(true)
    const running = startJob(job, 'r1', clock.now(), LEASE) as Job
    expect(cancellable(running)).toBe(false)
    const done = endJob(running, { runner: 'r1', runs: 1 }, clock.now(), { kind: 'done', resultBytes: 1, tookSeconds: 0, fetchedAt: clock.now() }, KEEP) as Job
    expect(cancellable(done)).toBe(false)
  })

  it('a queued job\'s place counts its team\'s queued jobs asked before it', () => {
    const clock = fakeClock()
    const a = asked(clock, 'a')
    clock.advance(1)
    const b = asked(clock, 'b')
    clock.advance(1)
    const c = asked(clock, 'c')
    const runningA = startJob(a, 'r1', clock.now(), LEASE) as Job
    expect(placeInQueue(c, [a, b, c])).toBe(3)
    expect(placeInQueue(c, [runningA, b, c])).toBe(2)
    expect(placeInQueue(runningA, [runningA, b, c])).toBeNull()
    expect(jobStatus(c, 2, clock.now(), FINALITY)).toMatchObject({ ...FINALITY, id: 'c', state: 'queued', placeInQueue: 2, expectedSeconds: 12.5, startedAt: null, askedAt: new Date(clock.now()).toISOString() })
  })
})

describe('startOrder: whose job a free slot takes', () => {
  const ids = (jobs: Job[]) => jobs.map((j) => j.id)
  const clock = fakeClock(0)
  const due = [asked(clock, 'a1', 'a'), asked(clock, 'a2', 'a'), asked(clock, 'a3', 'a'), asked(clock, 'b1', 'b'), asked(clock, 'c1', 'c')]

  it('a team alone takes every slot, earliest due first', () => {
    expect(ids(startOrder(due.slice(0, 3), new Map()))).toEqual(['a1', 'a2', 'a3'])
  })

  it('takes turns between the teams, those running fewest here first, then the one started longest ago (never first)', () => {
    expect(ids(startOrder(due, new Map()))).toEqual(['a1', 'b1', 'c1', 'a2', 'a3'])
    // a runs one and b none: b, then c (never started), then a.
    expect(ids(startOrder(due, new Map([['a', { running: 1, lastStart: 5 }], ['b', { running: 0, lastStart: 4 }]])))).toEqual(['c1', 'b1', 'a1', 'a2', 'a3'])
    // One slot, a's job just ended: a started last, so b and c come before its queue.
    expect(ids(startOrder(due, new Map([['a', { running: 0, lastStart: 2 }], ['b', { running: 0, lastStart: 1 }]])))).toEqual(['c1', 'b1', 'a1', 'a2', 'a3'])
  })
})
