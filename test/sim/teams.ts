import type { FailMode } from './platform.js'
import type { Random } from './random.js'
import type { SimClock } from './sim-clock.js'
import type { SimGateway, SimPriority } from './gateway.js'

/** A kind of report a team asks: its name (its work class) and base cost at the platform (ms). */
export interface Report {
  name: string
  costMs: number
}

/** How a team behaves. Every behaviour runs until `until` and asks through the replicas in `replicas`, in turn. */
export type Behaviour =
  /** `users` users, each asking `fanOut` reports at once and waiting for all of them before thinking and asking again. */
  | { kind: 'dashboard'; users: number; fanOut: number; reports: Report[]; thinkMs: [number, number] }
  /** `callers` callers, each asking one report, waiting for it, thinking, and asking again. */
  | { kind: 'callers'; callers: number; reports: Report[]; thinkMs: [number, number]; hangUpMs?: number; deadlineMs?: number; fail?: FailMode; holdMs?: number; priority?: SimPriority }
  /** Every `everyMs`, `size` calls at once (a dashboard opened by many, a cron job). */
  | { kind: 'bursts'; everyMs: number; size: number; reports: Report[] }

export interface TeamPlan {
  name: string
  weight: number
  behaviour: Behaviour
  /** The replicas it calls (a team's callers spread over them in turn). */
  replicas: number[]
  /** When it starts and stops asking (epoch ms). */
  from: number
  until: number
  /** Teams of one key ask the same reports at the same costs in the same order, whatever their calls' timing (the twins: simulate.ts). */
  commonAsks?: string
}

/**
 * What a team asks, drawn apart from its timing: its k-th call's report and cost factor
 * (the platform's spread) are the k-th draws of their own stream, however its callers'
 * calls interleave. Two teams given streams of one seed ask the same things (common random
 * numbers), so that what they get differs by what the governor gives them.
 */
export class Asks {
  readonly #random: Random
  readonly #spread: number

  constructor(random: Random, spread: number) {
    this.#random = random
    this.#spread = spread
  }

  next(reports: readonly Report[]): { report: Report; costFactor: number } {
    return { report: this.#random.pick(reports), costFactor: this.#random.spread(this.#spread) }
  }
}

/** How long a caller whose call was refused waits before it asks again. */
const RETRY_MS = 250

/** Runs a team's plan; resolves when its last call has ended. Its asks come from `asks` where given, else from `random` with its timing (the platform draws their costs). */
export async function runTeam(plan: TeamPlan, gateway: SimGateway, clock: SimClock, random: Random, asks?: Asks): Promise<void> {
  const { behaviour: b, name: team } = plan
  const ask = (reports: readonly Report[]): { report: Report; costFactor?: number } => (asks ? asks.next(reports) : { report: random.pick(reports) })
  let turn = 0
  const replica = () => plan.replicas[turn++ % plan.replicas.length] as number
  const think = (range: [number, number]) => clock.sleep(random.uniform(range[0], range[1]))
  await clock.sleep(Math.max(0, plan.from - clock.now()))
  const live = () => clock.now() < plan.until
  switch (b.kind) {
    case 'dashboard': {
      const user = async () => {
        await clock.sleep(random.uniform(0, 200))
        while (live()) {
          const records = await Promise.all(Array.from({ length: b.fanOut }, () => {
            const { report, costFactor } = ask(b.reports)
            return gateway.call(replica(), { team, workClass: report.name, costMs: report.costMs, fail: 'none', ...(costFactor === undefined ? {} : { costFactor }) })
          }))
          if (records.some((r) => r.result === 'refused')) await clock.sleep(RETRY_MS)
          await think(b.thinkMs)
        }
      }
      await Promise.all(Array.from({ length: b.users }, user))
      return
    }
    case 'callers': {
      const caller = async () => {
        await clock.sleep(random.uniform(0, 200))
        while (live()) {
          const { report, costFactor } = ask(b.reports)
          const record = await gateway.call(replica(), {
            team,
            workClass: report.name,
            costMs: report.costMs,
            fail: b.fail ?? 'none',
            ...(costFactor === undefined ? {} : { costFactor }),
            ...(b.priority === undefined ? {} : { priority: b.priority }),
            ...(b.hangUpMs === undefined ? {} : { hangUpMs: b.hangUpMs }),
            ...(b.deadlineMs === undefined ? {} : { deadlineMs: b.deadlineMs }),
            ...(b.holdMs === undefined ? {} : { holdMs: b.holdMs }),
          })
          // A caller refused at once does not ask again in the same instant.
          if (record.result === 'refused') await clock.sleep(RETRY_MS)
          await think(b.thinkMs)
        }
      }
      await Promise.all(Array.from({ length: b.callers }, caller))
      return
    }
    case 'bursts': {
      const calls: Promise<unknown>[] = []
      while (live()) {
        for (let i = 0; i < b.size; i++) {
          const { report, costFactor } = ask(b.reports)
          calls.push(gateway.call(replica(), { team, workClass: report.name, costMs: report.costMs, fail: 'none', ...(costFactor === undefined ? {} : { costFactor }) }))
        }
        await clock.sleep(b.everyMs)
      }
      await Promise.all(calls)
    }
  }
}
