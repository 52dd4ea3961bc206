import type { ByteBudget } from '../platform/client/answer-budget.js'

/**
 * The share of the budget one team's request bodies may hold at once: the rest stays for
 * the other teams' bodies and for every answer (a team that sends large bodies slowly
 * cannot take the room other teams' calls need).
 */
export const TEAM_BODY_SHARE = 1 / 4

/**
 * Request bodies held on this replica, within the budget the answers use
 * (platform.bufferTotalBytes): a body's bytes are counted as they arrive, and what its
 * parsed form and the text sent on hold once it is read (`BodyHold.grow`), until its
 * call's answer has gone (or its caller left). A body that does not fit, or would put its
 * team past TEAM_BODY_SHARE of the budget, is refused: 503 GW_BODY_BUDGET with
 * `retry-after` (admission.ts).
 */
export class BodyRoom {
  readonly #budget: ByteBudget
  readonly #reserve: (team: string, bytes: number) => boolean
  readonly #teams = new Map<string, number>()

  /**
   * `reserve`: takes a team's body bytes of the budget, making room where the answers can
   * (PlatformAnswers.reserveForBody: other teams' answers their callers stopped taking are
   * cut, as for an answer); by default the budget's room alone.
   */
  constructor(budget: ByteBudget, reserve?: (team: string, bytes: number) => boolean) {
    this.#budget = budget
    this.#reserve = reserve ?? ((_team, bytes) => budget.reserve(bytes))
  }

  /** What the budget allows one team's bodies. */
  get teamBytes(): number {
    return Math.floor(this.#budget.limit * TEAM_BODY_SHARE)
  }

  /** A hold for one body of `team`, empty until it grows. */
  hold(team: string): BodyHold {
    return new BodyHold(this, team)
  }

  /** Seconds until `bytes` more would fit (the budget's pace of room coming free). */
  retryAfterSec(bytes: number): number {
    return this.#budget.retryAfterSec(bytes)
  }

  /** Takes `bytes` for `team` if they fit in the budget and in the team's share; false takes nothing. */
  take(team: string, bytes: number): boolean {
    const held = this.#teams.get(team) ?? 0
    if (held + bytes > this.teamBytes || !this.#reserve(team, bytes)) return false
    this.#teams.set(team, held + bytes)
    return true
  }

  give(team: string, bytes: number): void {
    if (bytes <= 0) return
    this.#budget.free(bytes)
    const held = (this.#teams.get(team) ?? 0) - bytes
    if (held > 0) this.#teams.set(team, held)
    else this.#teams.delete(team)
  }
}

/** One body's bytes in the room: grown as it is read, given back once, when its call ends. */
export class BodyHold {
  readonly #room: BodyRoom
  readonly #team: string
  #bytes = 0
  #done = false

  constructor(room: BodyRoom, team: string) {
    ;[this.#room, this.#team] = [room, team]
  }

  /** What this body holds now. */
  get bytes(): number {
    return this.#bytes
  }

  /** Takes `bytes` more; false where they do not fit (the hold keeps what it had). */
  grow(bytes: number): boolean {
    if (this.#done) return false
    if (!this.#room.take(this.#team, bytes)) return false
    this.#bytes += bytes
    return true
  }

  /** Gives back everything held; later calls do nothing. */
  release(): void {
    if (this.#done) return
    this.#done = true
    this.#room.give(this.#team, this.#bytes)
    this.#bytes = 0
  }
}
