import { pino } from 'pino'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { encodeRecord, type TeamRecord } from '../../src/platform/governor/lease-plan.js'
import type { LeaseAnswer, LeaseAsk, LeaseStore } from '../../src/platform/governor/lease-store.js'
import { MemoryLeaseStore } from '../helpers/memory-lease-store.js'
import { RedisLeaseStore } from '../../src/platform/governor/redis-lease-store.js'
import { systemClock } from '../../src/clock.js'
import { RedisBreaker } from '../../src/redis/breaker.js'
import { RedisBus } from '../../src/redis/bus.js'
import { redisKey } from '../../src/redis/keys.js'
import { useRedis } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// The contract of a lease store (lease-store.ts): the Lua script of RedisLeaseStore and
// MemoryLeaseStore (the simulator's) follow the one rule, `grant`. The same sequence of
// renewals against both, on a real redis-server, gets the same answers.

const { available } = redisAvailability('the lease store contract')

const log = pino({ level: 'silent' })
const KEY = redisKey.seats('test:', 'default')

/** A run's record past its lease, as LeasedSeats sends it. */
function record(inFlight: number, need: number, teams: TeamRecord[] = [], answered = 0): string {
  const text = encodeRecord({ lease: 0, inFlight, need, answered, waited: false, teams })
  return text.slice(text.indexOf('|') + 1)
}

function ask(run: string, a: Partial<LeaseAsk> & { teams?: TeamRecord[] } = {}): LeaseAsk {
  const { teams, ...rest } = a
  const inFlight = a.inFlight ?? 0
  const need = a.need ?? a.ask ?? 0
  return { run, inFlight, need, ask: 0, limit: 8, held: 0, leaseMs: 60_000, limitRecord: null, learns: false, record: record(inFlight, need, teams), ...rest }
}

/** An answer with its other runs in run order (the stores need not list them alike), and without the store's clock. */
function sorted(answer: LeaseAnswer): Omit<LeaseAnswer, 'now'> {
  const { now: _clock, ...rest } = answer
  return { ...rest, others: [...answer.others].sort((x, y) => x.run.localeCompare(y.run)) }
}

const team = (name: string, held: number, waiting: number): TeamRecord => ({ team: name, weight: 2, cap: 3, held, waiting, lingering: false, peak: held + waiting })

/** The sequence both stores are put through, each step's answer. */
async function sequence(store: LeaseStore): Promise<Omit<LeaseAnswer, 'now'>[]> {
  const answers: Omit<LeaseAnswer, 'now'>[] = []
  const renew = async (a: LeaseAsk) => {
    const sent = Date.now()
    const answer = await store.renew(a)
    // The store's clock at the grant: this machine's, within the round trip (Redis' TIME and Date.now() read one clock).
    expect(answer.now).toBeGreaterThanOrEqual(sent - 1)
    expect(answer.now).toBeLessThanOrEqual(Date.now() + 1)
    answers.push(sorted(answer))
  }
  // A run asks for 3 of 8: granted.
  await renew(ask('r1', { ask: 3, need: 3, teams: [team('a', 0, 3)] }))
  // Another asks for 6, and writes the shared limit: what is left, 5.
  await renew(ask('r2', { ask: 6, need: 6, inFlight: 2, limitRecord: 'sealed-limit-1', teams: [team('b', 2, 4)] }))
  // The first renews with its calls in flight: its own seats again.
  await renew(ask('r1', { ask: 3, need: 3, inFlight: 3, teams: [team('a', 3, 0)] }))
  // A run the store has no record of, that held 2 (the store restarted): nothing is free.
  await renew(ask('r3', { ask: 4, need: 4, held: 2 }))
  // The second stops cleanly; the third asks again: its record was kept (it needs seats), so it is known.
  await store.giveBack('r2')
  await renew(ask('r3', { ask: 4, need: 4, held: 0 }))
  // A run with nothing held, used or needed leaves no record.
  await renew(ask('r1', { ask: 0, need: 0, inFlight: 0 }))
  await renew(ask('observer'))
  // The limit fell below what is held: nothing granted, less than nothing free.
  await renew(ask('r4', { ask: 2, need: 2, limit: 2 }))
  // Calls in flight past a lease count as held for the others.
  await renew(ask('r4', { ask: 1, need: 5, inFlight: 5, limit: 8 }))
  await renew(ask('r5', { ask: 8, need: 8, limitRecord: 'sealed-limit-2' }))
  // Every run stops; one the store lost, that held 1, asks for 3 of the 8 free: it gets back what it held.
  for (const run of ['r3', 'r4', 'r5']) await store.giveBack(run)
  await renew(ask('r6', { ask: 3, need: 3, held: 1 }))
  return answers
}

/** The answers the rule gives, whatever the store. */
const EXPECTED = [
  { granted: 3, free: 5, known: false, others: [], limitRecord: null },
  { granted: 5, free: 0, known: false, others: ['r1'], limitRecord: 'sealed-limit-1' },
  { granted: 3, free: 0, known: true, others: ['r2'], limitRecord: 'sealed-limit-1' },
  { granted: 0, free: 0, known: false, others: ['r1', 'r2'], limitRecord: 'sealed-limit-1' },
  { granted: 4, free: 1, known: true, others: ['r1'], limitRecord: 'sealed-limit-1' },
  { granted: 0, free: 4, known: true, others: ['r3'], limitRecord: 'sealed-limit-1' },
  { granted: 0, free: 4, known: false, others: ['r3'], limitRecord: 'sealed-limit-1' },
  { granted: 0, free: -2, known: false, others: ['r3'], limitRecord: 'sealed-limit-1' },
  { granted: 1, free: -1, known: true, others: ['r3'], limitRecord: 'sealed-limit-1' },
  { granted: 0, free: -1, known: false, others: ['r3', 'r4'], limitRecord: 'sealed-limit-2' },
  { granted: 1, free: 7, known: false, others: [], limitRecord: 'sealed-limit-2' },
]

describe.skipIf(!available)('the lease stores: one rule in Redis and in memory', () => {
  const redis = useRedis()
  let client: Redis
  let bus: RedisBus
  beforeAll(async () => {
    client = new Redis(redis.server.url, { maxRetriesPerRequest: 0, lazyConnect: true })
    client.on('error', () => undefined)
    await client.connect()
    bus = new RedisBus(client, 'test:bus:', log)
  })
  afterAll(async () => {
    await bus.close()
    client.disconnect()
  })

  const stores = (): [string, LeaseStore][] => [
    ['memory', new MemoryLeaseStore(systemClock, 0)],
    ['redis', new RedisLeaseStore({ redis: client, breaker: new RedisBreaker({ cooldownMs: 200, log }), bus, key: KEY, credential: 'default' })],
  ]

  it('gives the same answers to the same renewals, and those the rule gives', async () => {
    const [memory, inRedis] = await Promise.all(stores().map(([, store]) => sequence(store)))
    expect(inRedis).toEqual(memory)
    expect(memory?.map((a) => ({ ...a, others: a.others.map((o) => o.run) }))).toEqual(EXPECTED)
    // The records come back as sent, with the lease granted.
    expect(memory?.[1]?.others).toEqual([{ run: 'r1', lease: 3, inFlight: 0, need: 3, answered: 0, waited: false, teams: [team('a', 0, 3)] }])
    expect(memory?.[2]?.others[0]).toMatchObject({ run: 'r2', lease: 5, inFlight: 2, teams: [team('b', 2, 4)] })
  })

  it('answers the records with their calls only to the run that learns, in both', async () => {
    for (const [name, store] of stores()) {
      const text = encodeRecord({ lease: 0, inFlight: 1, need: 1, answered: 1, waited: false, teams: [team('a', 1, 0)], calls: 'kx;5,,abc,' })
      await store.renew(ask('caller', { ask: 1, need: 1, inFlight: 1, record: text.slice(text.indexOf('|') + 1) }))
      const learner = (await store.renew(ask('learner', { learns: true }))).others.find((r) => r.run === 'caller')
      const other = (await store.renew(ask('other', { learns: false }))).others.find((r) => r.run === 'caller')
      expect(learner, name).toMatchObject({ inFlight: 1, teams: [team('a', 1, 0)], calls: 'kx;5,,abc,' })
      expect(other, name).toMatchObject({ inFlight: 1, teams: [team('a', 1, 0)] })
      expect(other?.calls, name).toBeUndefined()
      for (const run of ['caller', 'learner', 'other']) await store.giveBack(run)
    }
  })

  it('lets a run\'s record lapse once it stops renewing, in both: its seats are free again', async () => {
    for (const [name, store] of stores()) {
      await store.renew(ask('brief', { ask: 6, need: 6, leaseMs: 300 }))
      expect((await store.renew(ask('observer', { ask: 8, need: 0 }))).granted, name).toBe(2)
      await waitFor(`${name}: the brief run's record lapsed`, async () => (await store.renew(ask('observer'))).others.length === 0, testTimeLeft(), 20)
      expect((await store.renew(ask('observer', { ask: 8, need: 0 }))).granted, name).toBe(8)
    }
  })

  it('tells a listening run, and no other, in both', async () => {
    for (const [name, store] of stores()) {
      let told = 0
      let marked = false
      await store.listen('r1', () => (told += 1))
      await store.listen('r3', () => (marked = true))
      await store.tell('r1')
      await store.tell('r2')
      // Told last: once r3 has heard, so has r1 of whatever reached it before.
      await store.tell('r3')
      await waitFor(`${name}: r3 told`, () => marked)
      expect(told, name).toBe(1)
    }
  })

  it('tells every other listening run with one message, in both, and not the run that tells', async () => {
    for (const [name, store] of stores()) {
      const heard: string[] = []
      for (const run of ['a1', 'a2', 'a3']) await store.listen(run, (everyone) => heard.push(`${run}:${everyone}`))
      await store.tellAll('a1')
      await store.tell('a1')
      await waitFor(`${name}: a2, a3 told of the limit, a1 of seats`, () => heard.length === 3)
      expect(heard.sort(), name).toEqual(['a1:false', 'a2:true', 'a3:true'])
    }
  })

  it('in Redis, drops a field that is not a record (a Redis writer\'s) rather than count it', async () => {
    await redis.client.hset(KEY, 'forged', 'not a record', 'limit', 'kept')
    const store = stores()[1]![1]
    const answer = await store.renew(ask('r1', { ask: 8, need: 8 }))
    expect(answer).toMatchObject({ granted: 8, others: [], limitRecord: 'kept' })
    expect(await redis.client.hexists(KEY, 'forged')).toBe(0)
  })
})
