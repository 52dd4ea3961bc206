import { LRUCache } from 'lru-cache'
import { TeamPartsLru } from '../cache/team-parts-lru.js'
import { learnLatency, type ClassLatency } from './refresh-ahead.js'

/**
 * The latency of each work class's platform calls (reports/refresh-ahead.ts `learnLatency`),
 * as each team's own calls found it and as any team's did, `max` of each. A team's own are
 * keyed by team and class, each configured team an even part once full: one team's many
 * report shapes push out its own classes, never another team's, whoever called a class
 * first or last. Any team's, one LRU by class, are read only where a team has none of its own
 * (a copy another team's call filled), as the governor's estimates of work alone are.
 */
export class ClassLatencies {
  readonly #own: TeamPartsLru<ClassLatency>
  readonly #any: LRUCache<string, ClassLatency>

  constructor(o: { max: number; teams: () => number; configured: (team: string) => boolean }) {
    this.#own = new TeamPartsLru<ClassLatency>({ maxBytes: o.max, teams: o.teams, configured: o.configured, size: () => 1 })
    this.#any = new LRUCache<string, ClassLatency>({ max: o.max })
  }

  /** `ms` more of `work`'s latency, a call of `team`'s. */
  learn(work: string, team: string, ms: number): void {
    const key = ownKey(team, work)
    this.#own.set(key, learnLatency(this.#own.get(key), ms), team)
    this.#any.set(work, learnLatency(this.#any.get(work), ms))
  }

  /** `work`'s latency as `team`'s own calls found it. */
  own(work: string, team: string): ClassLatency | undefined {
    return this.#own.get(ownKey(team, work))
  }

  /** `work`'s latency as any team's calls found it. */
  any(work: string): ClassLatency | undefined {
    return this.#any.get(work)
  }
}

const ownKey = (team: string, work: string): string => `${team}\n${work}`
