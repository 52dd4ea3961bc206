import { describe, expect, it } from 'vitest'
import { addSample, ago, bytes, expiryAt, expiryIn, instantsIn, lastAnswer, limitInForce, localInstant, onHover, pauseLeft, pauseScope, plural, ratio, seats, SOON_DAYS, span, timeTicks, urlHost, utcInstant, visible, windowRatio } from '../../src/console/console-format.js'

const DAY = 86_400
const NOW = Date.parse('2026-11-23T12:00:00Z')

describe('expiryIn', () => {
  it('says the whole days left, and marks the last SOON_DAYS days', () => {
    expect(expiryIn(40 * DAY + 500)).toEqual({ text: '40 days left', level: 'ok' })
    expect(expiryIn(SOON_DAYS * DAY)).toEqual({ text: `${SOON_DAYS} days left`, level: 'ok' })
    expect(expiryIn(SOON_DAYS * DAY - 1)).toEqual({ text: `${SOON_DAYS - 1} days left`, level: 'soon' })
    expect(expiryIn(DAY)).toEqual({ text: '1 day left', level: 'soon' })
  })

  it('says hours, then minutes, within the last day', () => {
    expect(expiryIn(5 * 3600 + 59)).toEqual({ text: '5 h left', level: 'soon' })
    expect(expiryIn(125)).toEqual({ text: '2 min left', level: 'soon' })
    expect(expiryIn(20)).toEqual({ text: '1 min left', level: 'soon' })
  })

  it('marks a past expiry expired, and no expiry as never', () => {
    expect(expiryIn(0)).toEqual({ text: 'expired', level: 'expired' })
    expect(expiryIn(-3 * DAY)).toEqual({ text: 'expired', level: 'expired' })
    expect(expiryIn(null)).toEqual({ text: 'never expires', level: 'none' })
  })

  it('reads an ISO expiry against the clock given', () => {
    expect(expiryAt('2026-12-03T12:00:00Z', NOW)).toEqual({ text: '10 days left', level: 'soon' })
    expect(expiryAt('2026-11-01T00:00:00Z', NOW).level).toBe('expired')
    expect(expiryAt(null, NOW).level).toBe('none')
  })
})

describe('ratio', () => {
  it('is a percentage with one decimal, a dash without a whole', () => {
    expect(ratio(1, 3)).toBe('33.3 %')
    expect(ratio(2, 2)).toBe('100.0 %')
    expect(ratio(0, 5)).toBe('0.0 %')
    expect(ratio(0, 0)).toBe('–')
  })
})

describe('windowRatio', () => {
  const WINDOW = 5 * 60_000

  it('gives the ratio since the start from one reading', () => {
    expect(windowRatio([{ at: NOW, hits: 9, lookups: 10 }], NOW, WINDOW)).toEqual({ text: '90.0 %', minutes: null })
    expect(windowRatio([], NOW, WINDOW)).toEqual({ text: '–', minutes: null })
  })

  it('gives the ratio of what happened between the oldest reading in the window and the newest', () => {
    const samples = [
      { at: NOW - 10 * 60_000, hits: 0, lookups: 100 }, // outside the window
      { at: NOW - 4 * 60_000, hits: 100, lookups: 200 },
      { at: NOW - 2 * 60_000, hits: 120, lookups: 240 },
      { at: NOW, hits: 145, lookups: 300 },
    ]
    expect(windowRatio(samples, NOW, WINDOW)).toEqual({ text: '45.0 %', minutes: 4 })
  })

  it('starts again after the counters went down (a restarted replica)', () => {
    const samples = [
      { at: NOW - 3 * 60_000, hits: 500, lookups: 600 },
      { at: NOW - 2 * 60_000, hits: 1, lookups: 10 },
      { at: NOW, hits: 11, lookups: 30 },
    ]
    expect(windowRatio(samples, NOW, WINDOW)).toEqual({ text: '50.0 %', minutes: 2 })
  })

  it('reads one replica\'s counters only: an admin address that answers from another replica starts the window again', () => {
    // Behind one address, the replica that answers changes; its counters are its own since its start.
    const a = '2026-11-23T10:00:00.000Z'
    const b = '2026-11-23T10:05:00.000Z'
    const samples = [
      { at: NOW - 4 * 60_000, hits: 100, lookups: 200, from: a },
      { at: NOW - 2 * 60_000, hits: 110, lookups: 220, from: a },
      { at: NOW, hits: 150, lookups: 400, from: b },
    ]
    expect(windowRatio(samples, NOW, WINDOW)).toEqual({ text: '37.5 %', minutes: null })
  })

  it('keeps only the readings of the window', () => {
    const kept = addSample([{ at: NOW - WINDOW - 1, hits: 0, lookups: 0 }, { at: NOW - 1000, hits: 1, lookups: 1 }], { at: NOW, hits: 2, lookups: 2 }, WINDOW)
    expect(kept.map((s) => s.hits)).toEqual([1, 2])
  })
})

describe('bytes and pauses', () => {
  it('writes sizes in binary units', () => {
    expect(bytes(512)).toBe('512 B')
    expect(bytes(1536)).toBe('1.5 KiB')
    expect(bytes(64 * 1024 * 1024)).toBe('64.0 MiB')
  })

  it('says how long a pause still lasts', () => {
    expect(pauseLeft(new Date(NOW + 42_000).toISOString(), NOW)).toBe('42 s left')
    expect(pauseLeft(new Date(NOW + 125_000).toISOString(), NOW)).toBe('2 min 5 s left')
    expect(pauseLeft(new Date(NOW - 1000).toISOString(), NOW)).toBe('0 s left')
  })
})

describe('plural and ago', () => {
  it('says one thing in the singular: 1 platform call, 2 platform calls, 0 requests', () => {
    expect(plural(1, 'platform call')).toBe('1 platform call')
    expect(plural(2, 'platform call')).toBe('2 platform calls')
    expect(plural(0, 'request')).toBe('0 requests')
    expect(plural(1, 'entry', 'entries')).toBe('1 entry')
    expect(plural(3, 'entry', 'entries')).toBe('3 entries')
  })

  it('says how long ago in the largest unit, and never for no time', () => {
    const now = Date.parse('2026-03-01T12:00:00Z')
    const cases: [string | null, string][] = [
      [null, 'never'],
      ['2026-03-01T11:59:30Z', 'just now'],
      ['2026-03-01T11:55:00Z', '5 min ago'],
      ['2026-03-01T09:00:00Z', '3 h ago'],
      ['2026-02-28T12:00:00Z', '1 day ago'],
      ['2026-02-01T12:00:00Z', '28 days ago'],
    ]
    for (const [iso, text] of cases) expect(ago(iso, now), String(iso)).toBe(text)
  })
})

describe('the limit in force (GET /admin/status governors)', () => {
  const learned = { limit: 13, maxConcurrent: 64, adaptive: true, knee: 12, phase: 'cruise', learner: true }

  it('says fixed, or learned within its ceiling with the knee and what the limit rule does', () => {
    expect(limitInForce({ ...learned, adaptive: false, knee: null, phase: null })).toBe('13, fixed')
    expect(limitInForce(learned)).toBe('13, learned (ceiling 64); knee 12, at the knee')
    expect(limitInForce({ ...learned, limit: 6, phase: 'fault' })).toBe('6, learned (ceiling 64); knee 12, halved while the platform fails')
    expect(limitInForce({ ...learned, phase: 'cruise' })).toBe('13, learned (ceiling 64); knee 12, at the knee')
    expect(limitInForce({ ...learned, phase: 'test' })).toBe('13, learned (ceiling 64); knee 12, testing whether the delay was a queue')
    // The limit rule's phase at a fresh start (knee-estimator.ts): the limit doubles while calls wait and no queue shows.
    expect(limitInForce({ ...learned, limit: 8, knee: 8, phase: 'start' })).toBe('8, learned (ceiling 64); knee 8, starting: doubling while calls wait and no queue shows')
    // A phase this console does not know is shown as it came.
    expect(limitInForce({ ...learned, phase: 'later' })).toBe('13, learned (ceiling 64); knee 12, later')
  })

  it('says a replica that takes the limit another one learns, not a phase its rule is not in', () => {
    expect(limitInForce({ ...learned, phase: 'start', learner: false })).toBe('13, learned (ceiling 64); knee 12, taken from the replica that learns it')
  })

  it('names what a pause after a platform 429 holds back: the credential, a team, a route, a team on a route', () => {
    expect(pauseScope({ scope: 'credential', team: null, route: null })).toBe('every call of the credential')
    expect(pauseScope({ scope: 'team', team: 'growth', route: null })).toBe('team growth')
    expect(pauseScope({ scope: 'route', team: null, route: 'GET /api/v1/report/campaigns/get' })).toBe('route GET /api/v1/report/campaigns/get')
    expect(pauseScope({ scope: 'team-route', team: 'growth', route: 'GET /api/v1/campaign/get' })).toBe('team growth on route GET /api/v1/campaign/get')
    expect(pauseScope({ scope: 'later', team: null, route: null })).toBe('later')
  })

  it('gives seats to a tenth: a share or a knee may be fractional', () => {
    expect([seats(4), seats(2.5), seats(10 / 3), seats(0)]).toEqual(['4', '2.5', '3.3', '0'])
  })
})

describe('instants: one time zone on the page (UTC), the browser\'s own on hover', () => {
  const AT = '2026-11-24T00:12:05.900Z'

  it('writes an instant in UTC with its date, 24-hour', () => {
    expect(utcInstant(AT)).toBe('2026-11-24 00:12:05 UTC')
    expect(utcInstant(Date.parse(AT))).toBe('2026-11-24 00:12:05 UTC')
    expect(utcInstant(AT, 'minutes')).toBe('2026-11-24 00:12 UTC')
    expect(utcInstant('2026-11-24T15:04:00Z')).toBe('2026-11-24 15:04:00 UTC')
  })

  it('writes the same instant in a browser\'s time zone for the hover, 24-hour, with its date', () => {
    expect(localInstant(AT, 'America/New_York')).toBe('2026-11-23 19:12:05')
    expect(localInstant('2026-07-01T12:00:00Z', 'America/New_York')).toBe('2026-07-01 08:00:00')
    expect(localInstant(AT, 'UTC')).toBe('2026-11-24 00:12:05')
    expect(localInstant('2026-11-24T23:30:00Z', 'Asia/Kolkata')).toBe('2026-11-25 05:00:00')
    expect(onHover(AT, 'America/New_York')).toBe("2026-11-23 19:12:05 in this browser's time zone (America/New_York)")
  })

  it('finds the instants a text holds, to mark each for the hover', () => {
    expect(instantsIn('replica b crashed at 2026-11-23 14:02:05 UTC; listed until 2026-11-23 15:02 UTC.')).toEqual([
      { text: 'replica b crashed at ', at: null },
      { text: '2026-11-23 14:02:05 UTC', at: '2026-11-23T14:02:05.000Z' },
      { text: '; listed until ', at: null },
      { text: '2026-11-23 15:02 UTC', at: '2026-11-23T15:02:00.000Z' },
      { text: '.', at: null },
    ])
    expect(instantsIn('no instant')).toEqual([{ text: 'no instant', at: null }])
  })

  it('labels the time axis in UTC, 24-hour, the date under the first label and under each new day', () => {
    const at = (h: number, m: number, day = 23) => Date.UTC(2026, 10, day, h, m) / 1000
    expect(timeTicks([at(23, 50), at(23, 55), at(0, 0, 24), at(0, 5, 24)])).toEqual(['23:50\n2026-11-23', '23:55', '00:00\n2026-11-24', '00:05'])
    expect(timeTicks([at(9, 0), at(13, 0)])).toEqual(['09:00\n2026-11-23', '13:00'])
    expect(timeTicks([])).toEqual([])
  })

  it('says a span of time in its two largest units', () => {
    expect([span(45), span(12 * 60 + 5), span(3 * 3600 + 5 * 60), span(86_396), span(2 * 86_400 + 4 * 3600)]).toEqual(['45 s', '12 min', '3 h 5 min', '23 h 59 min', '2 d 4 h'])
  })
})

describe('urlHost and lastAnswer (the console\'s webhook deliveries)', () => {
  it('shows a URL by its host and port only', () => {
    expect(urlHost('https://hooks.example.org/jobs/secret-path?token=abc')).toBe('hooks.example.org')
    expect(urlHost('http://localhost:8099/hook')).toBe('localhost:8099')
    expect(urlHost('not a url')).toBe('(not a URL)')
  })

  it('says the receiver\'s last status, else why none came, else nothing yet', () => {
    expect(lastAnswer({ lastStatus: 503, lastError: 'the receiver answered 503' })).toBe('503')
    expect(lastAnswer({ lastStatus: null, lastError: 'no answer within 10000ms' })).toBe('no answer within 10000ms')
    expect(lastAnswer({ lastStatus: null, lastError: null })).toBe('—')
  })
})

describe('visible', () => {
  it('writes each character that turns text around or hides in it as its code point, and leaves the rest', () => {
    expect(visible('\u202enimda yb degrup')).toBe('[U+202E]nimda yb degrup')
    expect(visible('gro\u200bwth\u2066x\u2069\ufeff')).toBe('gro[U+200B]wth[U+2066]x[U+2069][U+FEFF]')
    expect(visible('<img src=x> é 東京 ✓')).toBe('<img src=x> é 東京 ✓')
  })
})
