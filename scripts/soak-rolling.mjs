/**
 * The rolling restart of `npm run soak -- --rolling`: the replicas restarted one after the
 * other with SIGTERM under the soak's load, as a Kubernetes Deployment rolls, and the load
 * balancer's part as a Service has it:
 *   - it sends new requests only to the replicas it holds ready, and learns that a replica
 *     is not (its /readyz is not 200, or its admin listener refuses the connection) by
 *     asking every READINESS_MS: requests go on reaching a replica for up to that long
 *     after it was told to stop, on the connections the balancer has to it;
 *   - a request that got no answer because its connection failed before one (refused,
 *     or reset for a request that may be sent twice) is sent once to another ready
 *     replica, as Envoy's and nginx's upstream retries do. A 503 is an answer: it is not
 *     sent again, and it counts.
 * scripts/soak.mjs gives the env: replicas (slots with name, adminUrl, out), restart(slot)
 * (SIGTERM, wait for the exit, start again, wait until ready; resolves to a line),
 * ready(slot) (whether its /readyz answers 200), sleep(ms), stopping() and log(line).
 */

/** How often the balancer asks each replica whether it is ready (an endpoint update a second after the change). */
export const READINESS_MS = 1000
/** Between one replica back in the balancer and the next one told to stop. */
export const BETWEEN_MS = 5000
/** Load before the first restart, and none started when less than this is left of the load. */
export const MARGIN_MS = 10_000

/** Keeps each slot's `out` as the balancer sees it, until `stopping()`: resolves once it stops. */
export async function watchReadiness(env) {
  while (!env.stopping()) {
    await Promise.all(
      env.replicas.map(async (slot) => {
        slot.out = !(await env.ready(slot).catch(() => false))
      }),
    )
    await env.sleep(READINESS_MS)
  }
}

/**
 * Restarts the replicas one after the other, each once back in the balancer before the
 * next, round after round while more than MARGIN_MS of load is left (`leftMs()`).
 * Resolves to the rounds: each a list of `{ name, line, startS, endS }`.
 */
export async function rollingRestarts(env) {
  const rounds = []
  await env.sleep(MARGIN_MS)
  while (!env.stopping()) {
    const round = []
    for (const slot of env.replicas) {
      if (env.stopping() || env.leftMs() < MARGIN_MS) break
      const startS = env.now()
      const line = await env.restart(slot)
      // Back once the balancer sends it requests again.
      while (slot.out && !env.stopping()) await env.sleep(100)
      round.push({ name: slot.name, line, startS, endS: env.now() })
      env.log(`${slot.name}: ${line}; back in the balancer after ${(env.now() - startS).toFixed(1)} s`)
      await env.sleep(BETWEEN_MS)
    }
    if (round.length === 0) break
    rounds.push(round)
  }
  return rounds
}
