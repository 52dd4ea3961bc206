import type { Logger } from 'pino'
import { Cluster, type Redis } from 'ioredis'
import type { Clock, Timer } from '../clock.js'
import type { RedisBreaker } from './breaker.js'
import type { RedisClient } from './client.js'
import { COPY_ROOM_TAG, JOBS_TAG } from './keys.js'

// Report jobs' results carry no expiry in Redis (a job done is never evicted before its
// caller fetches it), so an evicting Redis makes room for them by evicting everything
// else that expires: every team's report copies, rate-limit windows, the credential's
// seats; once nothing is left to evict it refuses every write (no job of any team runs or
// ends). So the teams' results together take at most a share of Redis' maxmemory, split
// evenly among the teams: one team's results then fill its own part, never Redis.

/** The share of Redis' maxmemory the teams' job results together may take; the rest holds every key that expires and the jobs' records. */
export const RESULTS_SHARE = 0.5

/** How often Redis' maxmemory is read again (a CONFIG SET changes it without a restart). */
export const ROOM_READ_EVERY_MS = 60_000

/** What Redis says of its memory: `maxmemory` in bytes (0: no limit) and `maxmemory-policy`. */
export interface RedisMemory {
  maxBytes: number
  policy: string
}

/** The fields of INFO memory the room depends on, or null when the answer has none. */
export function parseMemoryInfo(info: string): RedisMemory | null {
  const max = /^maxmemory:(\d+)\r?$/m.exec(info)
  const policy = /^maxmemory_policy:(\S+?)\r?$/m.exec(info)
  return max && policy ? { maxBytes: Number(max[1]), policy: policy[1] as string } : null
}

/** What bounds the results one team's ended jobs keep. */
export interface ResultBound {
  /** Bytes of results (stored, compressed) the team may keep at once. */
  bytes: number
  /**
   * The room for every team's results when the team's part of it is the bound (smaller
   * than jobs.resultBytesPerTeam): its bytes, the teams it is split among, and the
   * maxmemory it is the share of (null: jobs.resultsRoom set it). null: the setting is.
   */
  room: { bytes: number; teams: number; maxmemory: number | null } | null
}

/** The room settings: jobs.resultBytesPerTeam, and jobs.resultsRoom (null: RESULTS_SHARE of Redis' maxmemory). */
export interface RoomSettings {
  resultBytesPerTeam: number
  resultsRoom: number | null
}

/**
 * A team's bound: the smaller of jobs.resultBytesPerTeam and its even part of the room
 * for every team's results (jobs.resultsRoom, or RESULTS_SHARE of `maxmemory`; none when
 * both are unknown or Redis has no limit, `maxmemory` null or 0).
 */
export function resultBound(settings: RoomSettings, maxmemory: number | null, teams: number): ResultBound {
  const room = settings.resultsRoom ?? (maxmemory ? Math.floor(maxmemory * RESULTS_SHARE) : null)
  const part = room === null ? Infinity : Math.floor(room / Math.max(1, teams))
  if (room === null || part >= settings.resultBytesPerTeam) return { bytes: settings.resultBytesPerTeam, room: null }
  return { bytes: part, room: { bytes: room, teams, maxmemory: settings.resultsRoom === null ? maxmemory : null } }
}

/**
 * One master's `maxmemory` (0: none), the share of the Cluster's hash slots it serves (1:
 * a Redis that is not a Cluster), whether it holds the jobs' keys (JOBS_TAG), where the job
 * results live, and whether it holds the records of the copies' room (COPY_ROOM_TAG).
 */
export interface MasterRoom {
  maxBytes: number
  share: number
  jobs: boolean
  records: boolean
}

/**
 * The most of a copy's counted bytes (cache/redis-store.ts: its value, its key and 900 bytes
 * beside them) that is its record in the copies' room: 198 bytes a copy (MEMORY USAGE of
 * the three records over 2,000 copies) of at least 1,000 counted. On a Cluster the records
 * sit on one master, not spread with the copies.
 */
export const RECORD_SHARE = 0.2

/**
 * A team's even part of what the room for job results leaves of Redis' maxmemory: the
 * report copies the team's fills keep in Redis take at most this (cache/redis-store.ts),
 * so that on a full Redis one team's copies fill its own part, never the other teams'
 * (an evicting Redis evicted theirs; one that does not refused their writes). The
 * results' room is jobs.resultsRoom, else RESULTS_SHARE of the smallest master's
 * maxmemory or what the teams' results can take at most (teams × jobs.resultBytesPerTeam),
 * the smaller: room the results can never fill is the copies'. It is what the results may
 * take, not what they hold now: results do not expire, and a copy is kept up to its
 * stale-if-error end, so copies that took the room of results yet to come would refuse
 * those results' writes (noeviction) for as long.
 *
 * On a Cluster the copies' keys spread over the masters by hash slot, their records sit on
 * the master of COPY_ROOM_TAG and the results on the master of JOBS_TAG: the room for every
 * copy is as large as the first master to fill allows, each master's room (its maxmemory,
 * less the results' room on the jobs' master) over what it holds of every copy (the share
 * of the slots it serves, and RECORD_SHARE of the rest on the records' master). null when
 * no master has a limit, or none is known.
 */
export function copyPart(settings: RoomSettings, masters: readonly MasterRoom[], teams: number): number | null {
  const bounded = masters.filter((m) => m.maxBytes > 0 && m.share > 0)
  if (bounded.length === 0) return null
  const everyTeam = Math.max(1, teams)
  const smallest = Math.min(...bounded.map((m) => m.maxBytes))
  const results = settings.resultsRoom ?? Math.min(Math.floor(smallest * RESULTS_SHARE), everyTeam * settings.resultBytesPerTeam)
  // What a master holds of every copy's counted bytes: its share of the copies, and on the records' master their records too.
  const held = (m: MasterRoom) => (m.records ? m.share + RECORD_SHARE * (1 - m.share) : m.share)
  const whole = Math.min(...bounded.map((m) => (m.maxBytes - (m.jobs ? results : 0)) / held(m)))
  return Math.max(0, Math.floor(whole / everyTeam))
}

/** The bound as a job's 413 names it: what it is and why. */
export function boundText(bound: ResultBound): string {
  const { room } = bound
  if (!room) return `jobs.resultBytesPerTeam (${bound.bytes})`
  const whole = room.maxmemory === null ? `jobs.resultsRoom (${room.bytes})` : `half of Redis' maxmemory (${room.maxmemory})`
  // jobs.resultsRoom bounds the results wherever they are kept: in Redis, or in a replica's memory without it.
  const where = room.maxmemory === null ? '' : ' in Redis'
  return `the team's part of the room for every team's job results${where} (${bound.bytes}: ${whole} split evenly among ${room.teams} teams, less than jobs.resultBytesPerTeam)`
}

/** What a team whose part of the room bounds its results may ask for, as a job's 413 says it; null when jobs.resultBytesPerTeam is the bound. */
export function roomGrowsWith(bound: ResultBound): string | null {
  if (!bound.room) return null
  if (bound.room.maxmemory === null) return 'the part grows with fewer teams or a larger jobs.resultsRoom: ask the operator'
  return "the part grows with Redis' maxmemory, fewer teams or jobs.resultsRoom: ask the operator"
}

/** The hash slots of a Redis Cluster. */
const SLOTS = 16_384

/** What Redis' masters say of their memory (readMemory). */
export interface MemoryRead {
  /** The smallest maxmemory among the masters that answer; null when none of them has a limit. */
  smallest: RedisMemory | null
  masters: MasterRoom[]
  /** The masters that answer (host:port, as ioredis names them) whose name a Cluster's slot map does not hold: their share is read as 0. */
  unnamed: string[]
  /** The masters a Cluster's slot map names. */
  slotMap: string[]
  /** The maxmemory-policy of a master with a maxmemory that evicts keys with no expiry (allkeys-*); null when none does. */
  evicting: string | null
}

/**
 * Whether a maxmemory-policy evicts keys that carry no expiry: report jobs' records and
 * results and webhook deliveries not yet made carry none, so that a volatile-* policy
 * never takes them (noeviction refuses writes instead, as the alerts say).
 */
export function evictsAnyKey(policy: string): boolean {
  return policy.startsWith('allkeys-')
}

/**
 * What Redis' masters say of their memory (every master of a Cluster, each with the share
 * of the slots it serves) among those that answer INFO memory; undefined when none answers.
 * A master is found in the slot map by its host:port; where the map names it otherwise (a
 * natMap, announced host names) its share is unknown and read as 0, and it is among
 * `unnamed`. On a Cluster whose master of the jobs (or of the copies' records) is not known
 * or not among those that answer, every master is taken to hold them. The bare tags' slots
 * are the real keys' (redis/keys.ts): config refuses a redis.keyPrefix with "{" on a Cluster.
 */
export async function readMemory(redis: RedisClient): Promise<MemoryRead | undefined> {
  const cluster = redis instanceof Cluster ? redis : null
  const nodes: Redis[] = cluster ? cluster.nodes('master') : [redis as Redis]
  const served = new Map<string, number>()
  let jobsAt: string | null = null
  let recordsAt: string | null = null
  if (cluster) {
    const slotOf = (tag: string) => cluster.cluster('KEYSLOT', tag).catch(() => null)
    const [jobsSlot, recordsSlot] = await Promise.all([slotOf(JOBS_TAG), slotOf(COPY_ROOM_TAG)])
    cluster.slots.forEach((keys, slot) => {
      const master = keys[0]
      if (master === undefined) return
      served.set(master, (served.get(master) ?? 0) + 1)
      if (slot === jobsSlot) jobsAt = master
      if (slot === recordsSlot) recordsAt = master
    })
  }
  let smallest: RedisMemory | null | undefined
  const answered: { at: string | null; memory: RedisMemory }[] = []
  for (const node of nodes) {
    const memory = parseMemoryInfo(await node.info('memory').catch(() => ''))
    if (!memory) continue
    answered.push({ at: cluster ? `${node.options.host}:${node.options.port}` : null, memory })
    smallest ??= null
    if (memory.maxBytes > 0 && (smallest === null || memory.maxBytes < smallest.maxBytes)) smallest = memory
  }
  if (smallest === undefined) return undefined
  const names = new Set(answered.map((a) => a.at))
  const holds = (at: string | null, holder: string | null) => at === null || holder === null || !names.has(holder) || holder === at
  const masters = answered.map(({ at, memory }) => ({
    maxBytes: memory.maxBytes,
    share: at === null ? 1 : (served.get(at) ?? 0) / SLOTS,
    jobs: holds(at, jobsAt),
    records: holds(at, recordsAt),
  }))
  const unnamed = answered.flatMap(({ at }) => (at !== null && !served.has(at) ? [at] : []))
  const evicting = answered.find(({ memory }) => memory.maxBytes > 0 && evictsAnyKey(memory.policy))?.memory.policy ?? null
  return { smallest, masters, unnamed, slotMap: [...served.keys()], evicting }
}

/**
 * The room for the teams' job results in Redis as it is now: Redis' maxmemory read at
 * start, at every teams reload and every ROOM_READ_EVERY_MS, the number of teams as it is
 * at each job's end. One info line each time the bound a team gets changes. A Redis that
 * does not answer INFO (a managed one that renames it) leaves the last maxmemory read
 * (none: jobs.resultBytesPerTeam alone, unless jobs.resultsRoom is set).
 */
export class ResultRoom {
  readonly #o: { redis: RedisClient | null; breaker: RedisBreaker | null; settings: RoomSettings; teams: () => number; log: Pick<Logger, 'info' | 'warn'>; clock: Clock }
  #memory: RedisMemory | null = null
  #masters: MasterRoom[] = []
  #logged = resultBound({ resultBytesPerTeam: 0, resultsRoom: null }, null, 0)
  #noCopies = false
  #unnamed: string[] = []
  #evicting: string | null = null
  #timer: Timer | null = null

  constructor(o: { redis: RedisClient | null; breaker: RedisBreaker | null; settings: RoomSettings; teams: () => number; log: Pick<Logger, 'info' | 'warn'>; clock: Clock }) {
    this.#o = o
  }

  /** A team's bound now. */
  bound(): ResultBound {
    return resultBound(this.#o.settings, this.#memory?.maxBytes ?? null, this.#o.teams())
  }

  /** A team's part of Redis for its report copies now (copyPart); null: no bound. */
  copyPart(): number | null {
    return copyPart(this.#o.settings, this.#masters, this.#o.teams())
  }

  /** Reads Redis' maxmemory again (the copies' part needs it even where jobs.resultsRoom sets the results'), then says the bound if it changed. */
  async read(): Promise<void> {
    const { redis, breaker } = this.#o
    if (redis && breaker) {
      const memory = await breaker.run(() => readMemory(redis), undefined)
      if (memory !== undefined) {
        this.#memory = memory.smallest
        this.#masters = memory.masters
        this.#sayUnnamed(memory)
        this.#sayEvicting(memory.evicting)
      }
    }
    this.#say()
  }

  async start(): Promise<void> {
    await this.read()
    this.#timer ??= this.#o.clock.setInterval(() => void this.read(), ROOM_READ_EVERY_MS).unref()
  }

  close(): void {
    this.#o.clock.clearInterval(this.#timer)
    this.#timer = null
  }

  #say(): void {
    this.#sayCopies()
    const bound = this.bound()
    const last = this.#logged
    if (bound.bytes === last.bytes && bound.room?.bytes === last.room?.bytes && bound.room?.teams === last.room?.teams) return
    this.#logged = bound
    const { settings } = this.#o
    if (!bound.room) {
      if (last.room) this.#o.log.info({ resultBytesPerTeam: bound.bytes }, "report jobs' results: each team's bound is jobs.resultBytesPerTeam")
      return
    }
    this.#o.log.info(
      { resultBytesPerTeam: settings.resultBytesPerTeam, boundBytes: bound.bytes, roomBytes: bound.room.bytes, teams: bound.room.teams, maxmemory: bound.room.maxmemory, policy: this.#memory?.policy ?? null },
      `report jobs' results: each team's bound is ${boundText(bound)}`,
    )
  }

  /** A Redis that evicts keys with no expiry at its maxmemory: said once each time its policy comes to one. */
  #sayEvicting(policy: string | null): void {
    if (policy !== null && policy !== this.#evicting) {
      this.#o.log.warn(
        { policy },
        `Redis evicts keys that carry no expiry at its maxmemory (maxmemory-policy ${policy}): report jobs' records and results, webhook deliveries not yet made, the purges and the team suspensions may be lost; set maxmemory-policy to volatile-lru (report copies carry an expiry) or noeviction`,
      )
    }
    this.#evicting = policy
  }

  /** Masters the slot map does not name are left out of the copies' part: said once each time it comes to that. */
  #sayUnnamed(memory: MemoryRead): void {
    if (memory.unnamed.length > 0 && this.#unnamed.length === 0) {
      const without = this.copyPart() === null ? ': with none left, no part bounds the report copies' : ''
      this.#o.log.warn(
        { masters: memory.unnamed, slotMap: memory.slotMap },
        `the Redis Cluster's slot map names none of the masters ${memory.unnamed.join(', ')} (by host:port, as the gateway reaches them): their share of the slots is unknown, and the report copies' part of Redis is reckoned without them${without}`,
      )
    }
    this.#unnamed = memory.unnamed
  }

  /** A part of nothing keeps every copy out of Redis (each replica calls for its own): said once each time it comes to that. */
  #sayCopies(): void {
    const none = this.copyPart() === 0
    if (none && !this.#noCopies) {
      const { resultsRoom } = this.#o.settings
      this.#o.log.warn(
        { resultsRoom, maxmemory: this.#memory?.maxBytes ?? null },
        `jobs.resultsRoom (${resultsRoom}) leaves no part of Redis' maxmemory (${this.#memory?.maxBytes}) for report copies: every copy stays in its replica's memory (gateway_cache_copies_over_part_total); set jobs.resultsRoom below maxmemory`,
      )
    }
    this.#noCopies = none
  }
}
