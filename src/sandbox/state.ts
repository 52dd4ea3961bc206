import type { CampaignCatalog } from './catalog.js'
import type { Conditions } from './conditions.js'
import type { SandboxAccount, SandboxCredentials, SandboxRequestRecord } from './types.js'
import type { IssuedTokens } from './tokens.js'
import type { ThrottleCounts } from './throttle-counts.js'

/** Everything one sandbox remembers; the routes share it, the tests steer it. */
export interface SandboxState {
  readonly seed: number
  readonly accounts: ReadonlyMap<number, SandboxAccount>
  readonly credentials: SandboxCredentials
  readonly grantType: string
  readonly tokenTtlSeconds: number
  /** Report answers in the caller's language (SandboxOptions.localized). */
  readonly localized: boolean
  /** A POST report without campaignIds reads every campaign of the token (SandboxOptions.reportAllCampaigns). */
  readonly reportAllCampaigns: boolean
  /** A report read narrows its rows to `filter[campaignIds]` (SandboxOptions.reportFilter). */
  readonly reportFilter: boolean
  /** Error answers carry Laravel's debug fields (SandboxOptions.debug). */
  readonly debug: boolean
  /** Answers to requests that want JSON carry Debugbar's data headers (SandboxOptions.debugbar). */
  readonly debugbar: boolean
  readonly tokens: IssuedTokens
  readonly catalog: CampaignCatalog
  readonly conditions: Conditions
  /** Laravel's throttle count per token user, written on every authenticated answer. */
  readonly throttle: ThrottleCounts
  /** The time the throttles count on (SandboxOptions.throttleClock). */
  readonly throttleNow: () => number
  readonly requests: SandboxRequestRecord[]
}
