/**
 * Which credentials' platform calls fail on this replica now: the latest
 * `FAILED_IN_A_ROW` tries of the credential got no answer (a refused or broken connection,
 * no answer within its deadline) or a 5xx, the latest of them within `FAILED_WITHIN_MS`,
 * and none was answered since. Readiness and the replica's announcement list such a
 * credential under `degraded` (`platform:<credential>`), which the console's banner reads: a
 * platform that is down shows where the operator looks first, beside a refused token.
 *
 * One failure among answers is no outage (a 5xx of one report); a failure seen long ago
 * says nothing of now, so a replica that made no call since stops naming it.
 */
export const FAILED_IN_A_ROW = 3
export const FAILED_WITHIN_MS = 5 * 60_000

export class PlatformFailing {
  /** Credential → its failed tries since its latest answer, and when the latest failed. */
  readonly #failed = new Map<string, { tries: number; at: number }>()

  /** A try of `credential` that got no answer, or a 5xx, at `now`. */
  failed(credential: string, now: number): void {
    this.#failed.set(credential, { tries: (this.#failed.get(credential)?.tries ?? 0) + 1, at: now })
  }

  /** A try of `credential` the platform answered (any status below 500). */
  answered(credential: string): void {
    this.#failed.delete(credential)
  }

  /** The credentials whose platform calls fail at `now`, by name. */
  failing(now: number): string[] {
    return [...this.#failed].filter(([, f]) => f.tries >= FAILED_IN_A_ROW && now - f.at <= FAILED_WITHIN_MS).map(([name]) => name).sort()
  }
}
