import type { FastifyInstance } from 'fastify'
import type { Metrics } from '../../observe/metrics.js'
import type { TeamUsage } from '../../observe/usage.js'
import type { TokenRegistry } from '../../platform/tokens/token-registry.js'
import type { PlatformGovernors } from '../../platform/governor/platform-governors.js'
import type { PlatformAnswers } from '../../platform/client/answer-buffer.js'
import { NOT_KEPT } from '../health.js'

/** GET /metrics (never kept by a cache: NOT_KEPT): the gauges read from the tokens, the governors, the answers in flight and usage at each scrape, then the registry. */
export function metricsRoute(
  admin: FastifyInstance,
  { metrics, tokens, governors, answers, usage }: { metrics: Metrics; tokens: TokenRegistry; governors: PlatformGovernors; answers: PlatformAnswers; usage: TeamUsage },
): void {
  admin.get('/metrics', async (_request, reply) => {
    for (const p of tokens.all()) {
      const info = p.info()
      if (info.secondsLeft !== null) metrics.tokenSecondsLeft.set({ credential: p.name }, info.secondsLeft)
      metrics.tokenUsable.set({ credential: p.name }, info.usable ? 1 : 0)
    }
    // A team that no longer waits shows no line rather than a stale one.
    metrics.platformWaiting.reset()
    for (const g of governors.views()) {
      metrics.platformQueued.set({ credential: g.credential }, g.queued)
      metrics.platformInFlight.set({ credential: g.credential }, g.inFlight)
      metrics.platformSeatsHeld.set({ credential: g.credential }, g.seatsHeld)
      metrics.platformPermitsHeld.set({ credential: g.credential }, g.seatsHeld)
      for (const [team, n] of g.seats.waiting()) metrics.platformWaiting.set({ credential: g.credential, team }, n)
    }
    metrics.answerBytes.set(answers.budget.used)
    usage.publishMetrics()
    return reply.header('content-type', metrics.registry.contentType).header('cache-control', NOT_KEPT).send(await metrics.registry.metrics())
  })
}
