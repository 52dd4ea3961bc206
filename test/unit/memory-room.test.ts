import { describe, expect, it } from 'vitest'
import { Cluster } from 'ioredis'
import type { Logger } from 'pino'
import { boundText, roomGrowsWith, copyPart, parseMemoryInfo, resultBound, ResultRoom, RESULTS_SHARE, type MasterRoom } from '../../src/redis/memory-room.js'
import type { RedisBreaker } from '../../src/redis/breaker.js'
import type { RedisClient } from '../../src/redis/client.js'
import { systemClock } from '../../src/clock.js'

describe('parseMemoryInfo', () => {
  it("reads maxmemory and its policy from INFO memory's lines", () => {
    const info = '# Memory\r\nused_memory:1675952\r\nmaxmemory:67108864\r\nmaxmemory_human:64.00M\r\nmaxmemory_policy:volatile-lru\r\n'
    expect(parseMemoryInfo(info)).toEqual({ maxBytes: 67_108_864, policy: 'volatile-lru' })
  })

  it('is null for an answer without them', () => {
    expect(parseMemoryInfo('')).toBeNull()
    expect(parseMemoryInfo('maxmemory:1\r\n')).toBeNull()
  })
})

describe('resultBound', () => {
  const settings = { resultBytesPerTeam: 300, resultsRoom: null }

  it("is the team's even part of half of maxmemory when that is the smaller", () => {
    expect(RESULTS_SHARE).toBe(0.5)
    expect(resultBound(settings, 1000, 3)).toEqual({ bytes: 166, room: { bytes: 500, teams: 3, maxmemory: 1000 } })
  })

  it('is jobs.resultBytesPerTeam when it fits in the part, or Redis has no maxmemory', () => {
    expect(resultBound(settings, 1000, 1)).toEqual({ bytes: 300, room: null })
    expect(resultBound(settings, null, 100)).toEqual({ bytes: 300, room: null })
    expect(resultBound(settings, 0, 100)).toEqual({ bytes: 300, room: null })
  })

  it('takes jobs.resultsRoom for the room whatever Redis says', () => {
    expect(resultBound({ resultBytesPerTeam: 300, resultsRoom: 400 }, null, 4)).toEqual({ bytes: 100, room: { bytes: 400, teams: 4, maxmemory: null } })
    expect(resultBound({ resultBytesPerTeam: 300, resultsRoom: 4000 }, 100, 4)).toEqual({ bytes: 300, room: null })
  })

  it('names what bounds and why', () => {
    expect(boundText(resultBound(settings, null, 3))).toBe('jobs.resultBytesPerTeam (300)')
    expect(boundText(resultBound(settings, 1000, 3))).toBe("the team's part of the room for every team's job results in Redis (166: half of Redis' maxmemory (1000) split evenly among 3 teams, less than jobs.resultBytesPerTeam)")
    expect(boundText(resultBound({ resultBytesPerTeam: 300, resultsRoom: 400 }, null, 4))).toContain('(100: jobs.resultsRoom (400) split evenly among 4 teams')
  })

  it('says where the room is only when Redis\' maxmemory sets it: jobs.resultsRoom bounds the results in a replica\'s memory too, without Redis', () => {
    const set = resultBound({ resultBytesPerTeam: 300, resultsRoom: 400 }, null, 4)
    expect(boundText(set)).toBe("the team's part of the room for every team's job results (100: jobs.resultsRoom (400) split evenly among 4 teams, less than jobs.resultBytesPerTeam)")
    expect(roomGrowsWith(set)).toBe('the part grows with fewer teams or a larger jobs.resultsRoom: ask the operator')
    expect(roomGrowsWith(resultBound(settings, 1000, 3))).toBe("the part grows with Redis' maxmemory, fewer teams or jobs.resultsRoom: ask the operator")
    expect(roomGrowsWith(resultBound(settings, null, 3))).toBeNull()
  })
})

describe('copyPart', () => {
  const perTeam = 1000
  /** A Redis that is not a Cluster, at `maxmemory`. */
  const single = (maxBytes: number): MasterRoom[] => [{ maxBytes, share: 1, jobs: true, records: true }]
  it("is the team's even part of what the results' room leaves of maxmemory", () => {
    expect(copyPart({ resultBytesPerTeam: perTeam, resultsRoom: null }, single(1000), 3)).toBe(166)
    expect(copyPart({ resultBytesPerTeam: perTeam, resultsRoom: 400 }, single(1000), 4)).toBe(150)
    expect(copyPart({ resultBytesPerTeam: perTeam, resultsRoom: 4000 }, single(1000), 4)).toBe(0)
  })

  it('leaves the results no more room than the teams\' results can take (teams × jobs.resultBytesPerTeam): one team on a large Redis gets the rest', () => {
    // One team whose results take at most 300 of half of 1000: its copies get 700, not 500.
    expect(copyPart({ resultBytesPerTeam: 300, resultsRoom: null }, single(1000), 1)).toBe(700)
    // Two: 600 of 500, so half, as before.
    expect(copyPart({ resultBytesPerTeam: 300, resultsRoom: null }, single(1000), 2)).toBe(250)
    // jobs.resultsRoom set: as it says.
    expect(copyPart({ resultBytesPerTeam: 300, resultsRoom: 500 }, single(1000), 1)).toBe(500)
  })

  it('on a Cluster, is as large as the first master to fill allows: each master\'s room (less the results\' on the jobs\' master) over its share of the slots', () => {
    const settings = { resultBytesPerTeam: perTeam, resultsRoom: null }
    // Three masters of 1000, a third of the slots each: the jobs' master, 500 left of it beside the results' 500 (half the smallest) for a third of the copies, bounds them at 1500 (the smallest master alone: 500).
    const three = (jobsOn: number, recordsOn = 1): MasterRoom[] => [0, 1, 2].map((i) => ({ maxBytes: 1000, share: 1 / 3, jobs: i === jobsOn, records: i === recordsOn }))
    expect(copyPart(settings, three(0), 1)).toBe(1500)
    expect(copyPart(settings, three(0), 3)).toBe(500)
    // A smaller master fills first: 600 over a third of the slots bounds every copy at 1800 (the jobs' master: 700 left, 2100).
    expect(copyPart(settings, [{ maxBytes: 600, share: 1 / 3, jobs: false, records: false }, { maxBytes: 1000, share: 1 / 3, jobs: true, records: false }, { maxBytes: 1000, share: 1 / 3, jobs: false, records: false }], 1)).toBe(1800)
    expect(copyPart(settings, [{ maxBytes: 400, share: 1 / 3, jobs: false, records: false }, { maxBytes: 1000, share: 1 / 3, jobs: true, records: false }, { maxBytes: 1000, share: 1 / 3, jobs: false, records: false }], 1)).toBe(1200)
    // The records' master holds a third of the copies and RECORD_SHARE of the rest: 1000 over 1/3 + 0.2 × 2/3 (2142), the jobs' master 1500.
    expect(copyPart(settings, three(0, 1), 1)).toBe(1500)
    // Both on one master: 500 over 1/3 + 0.2 × 2/3.
    expect(copyPart(settings, three(0, 0), 1)).toBe(1071)
    // A master without a limit bounds nothing; one serving no slot holds no copy.
    expect(copyPart(settings, [{ maxBytes: 0, share: 1 / 2, jobs: true, records: false }, { maxBytes: 1000, share: 1 / 2, jobs: false, records: false }, { maxBytes: 10, share: 0, jobs: false, records: false }], 1)).toBe(2000)
  })

  it('is none when Redis has no maxmemory, or none is known, whatever jobs.resultsRoom says', () => {
    expect(copyPart({ resultBytesPerTeam: perTeam, resultsRoom: null }, [], 3)).toBeNull()
    expect(copyPart({ resultBytesPerTeam: perTeam, resultsRoom: 400 }, single(0), 3)).toBeNull()
  })
})

describe('ResultRoom', () => {
  function room(teams: { n: number }) {
    const memory = { max: 1000, answers: true }
    const redis = { info: async () => (memory.answers ? `maxmemory:${memory.max}\r\nmaxmemory_policy:volatile-lru\r\n` : Promise.reject(new Error('unknown command'))) } as unknown as RedisClient
    const breaker = { run: (fn: () => Promise<unknown>) => fn() } as unknown as RedisBreaker
    const lines: { fields: Record<string, unknown>; msg: string }[] = []
    const log = { info: (fields: Record<string, unknown>, msg: string) => lines.push({ fields, msg }), warn: () => undefined } as unknown as Pick<Logger, 'info' | 'warn'>
    const r = new ResultRoom({ redis, breaker, settings: { resultBytesPerTeam: 300, resultsRoom: null }, teams: () => teams.n, log, clock: systemClock })
    return { r, memory, lines }
  }

  it("follows Redis' maxmemory at each read and the teams at each bound, saying each change once", async () => {
    const teams = { n: 2 }
    const { r, memory, lines } = room(teams)
    expect(r.bound().bytes).toBe(300)
    await r.read()
    expect(r.bound()).toMatchObject({ bytes: 250 })
    await r.read()
    expect(lines.map((l) => l.fields.boundBytes)).toEqual([250])
    teams.n = 5
    expect(r.bound().bytes).toBe(100)
    memory.max = 600
    await r.read()
    expect(r.bound().bytes).toBe(60)
    expect(r.copyPart()).toBe(60)
    memory.max = 0
    await r.read()
    expect(r.bound()).toEqual({ bytes: 300, room: null })
    expect(r.copyPart()).toBeNull()
    expect(lines.map((l) => l.msg)).toEqual([
      expect.stringContaining('(250: half of Redis\' maxmemory (1000) split evenly among 2 teams'),
      expect.stringContaining('(60: half of Redis\' maxmemory (600) split evenly among 5 teams'),
      "report jobs' results: each team's bound is jobs.resultBytesPerTeam",
    ])
  })

  it("warns once when jobs.resultsRoom leaves the report copies no part of Redis' maxmemory", async () => {
    const memory = { max: 1000 }
    const redis = { info: async () => `maxmemory:${memory.max}\r\nmaxmemory_policy:volatile-lru\r\n` } as unknown as RedisClient
    const breaker = { run: (fn: () => Promise<unknown>) => fn() } as unknown as RedisBreaker
    const warned: string[] = []
    const log = { info: () => undefined, warn: (_fields: Record<string, unknown>, msg: string) => warned.push(msg) } as unknown as Pick<Logger, 'info' | 'warn'>
    const r = new ResultRoom({ redis, breaker, settings: { resultBytesPerTeam: 300, resultsRoom: 1000 }, teams: () => 2, log, clock: systemClock })
    await r.read()
    await r.read()
    expect(r.copyPart()).toBe(0)
    expect(warned).toEqual([expect.stringContaining('jobs.resultsRoom (1000) leaves no part of Redis\' maxmemory (1000) for report copies')])
    memory.max = 3000
    await r.read()
    expect(r.copyPart()).toBe(1000)
    expect(warned).toHaveLength(1)
  })

  it("warns once when the Cluster's slot map names none of the masters that answer (ioredis natMap, announced host names): their share is unknown", async () => {
    const master = (host: string, port: number, max: number) => ({ options: { host, port }, info: async () => `maxmemory:${max}\r\nmaxmemory_policy:noeviction\r\n` })
    const nodes = [master('redis-0', 7000, 1000), master('redis-1', 7001, 3000)]
    const slotMap = { names: ['10.0.0.1:7000', '10.0.0.2:7001'] }
    const cluster = Object.assign(Object.create(Cluster.prototype) as Cluster, {
      nodes: () => nodes,
      cluster: async (_sub: string, key: string) => (key === '{jobs}' ? 1 : 16_000),
    })
    Object.defineProperty(cluster, 'slots', { get: () => Array.from({ length: 16_384 }, (_, slot) => [slotMap.names[slot < 8192 ? 0 : 1]!]) })
    const breaker = { run: (fn: () => Promise<unknown>) => fn() } as unknown as RedisBreaker
    const warned: { fields: Record<string, unknown>; msg: string }[] = []
    const log = { info: () => undefined, warn: (fields: Record<string, unknown>, msg: string) => warned.push({ fields, msg }) } as unknown as Pick<Logger, 'info' | 'warn'>
    const r = new ResultRoom({ redis: cluster, breaker, settings: { resultBytesPerTeam: 10_000, resultsRoom: null }, teams: () => 1, log, clock: systemClock })
    await r.read()
    await r.read()
    expect(r.copyPart()).toBeNull()
    expect(warned).toEqual([
      {
        fields: { masters: ['redis-0:7000', 'redis-1:7001'], slotMap: ['10.0.0.1:7000', '10.0.0.2:7001'] },
        msg: expect.stringContaining("the Redis Cluster's slot map names none of the masters redis-0:7000, redis-1:7001"),
      },
    ])
    // Named alike: each master's share of the slots, the jobs' on the first (results' room: half the smallest, 500).
    slotMap.names = ['redis-0:7000', 'redis-1:7001']
    await r.read()
    expect(r.copyPart()).toBe(1000)
    expect(warned).toHaveLength(1)
  })

  it('keeps the last maxmemory read while Redis does not answer INFO', async () => {
    const { r, memory } = room({ n: 2 })
    await r.read()
    memory.answers = false
    memory.max = 10
    await r.read()
    expect(r.bound().bytes).toBe(250)
  })
})
