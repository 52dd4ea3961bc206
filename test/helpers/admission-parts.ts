import pino from 'pino'
import type { AdmissionParts } from '../../src/access/admission.js'
import { AdminAuth } from '../../src/access/admin-auth.js'
import type { CampaignOwners } from '../../src/access/campaign-owners.js'
import { RateLimiter } from '../../src/access/rate-limit.js'
import type { TeamDirectory } from '../../src/access/team-auth.js'
import { TeamSuspensions } from '../../src/access/team-suspensions.js'
import { systemClock } from '../../src/clock.js'
import type { Config } from '../../src/config.js'
import { SecretSet } from '../../src/observe/logger.js'
import { createMetrics } from '../../src/observe/metrics.js'
import { ByteBudget } from '../../src/platform/client/answer-budget.js'
import type { TokenRegistry } from '../../src/platform/tokens/token-registry.js'

/** What an Admission reads, for a unit test without Redis: `config` and `teams` the test's, the rest stand-ins, `over` them. */
export function admissionParts(config: Config, teams: TeamDirectory, over: Partial<AdmissionParts> = {}): AdmissionParts {
  return {
    config,
    teams,
    rateLimiter: new RateLimiter({ redis: null, breaker: null, prefix: 't:', teams }),
    metrics: createMetrics(),
    tokens: { get: (name: string) => ({ name }) } as unknown as TokenRegistry,
    campaignOwners: {} as CampaignOwners,
    creativeSetOwners: null,
    secrets: new SecretSet(),
    adminAuth: new AdminAuth([]),
    suspensions: new TeamSuspensions({ redis: null, breaker: null, bus: null, seal: null, keyPrefix: 't:', periodMs: 3_600_000, clock: systemClock, log: pino({ level: 'silent' }), onSuspended: () => undefined, onUnverified: () => undefined }),
    answers: { budget: new ByteBudget(1 << 20) },
    reports: { turn: () => Promise.resolve(true) },
    ...over,
  }
}
