/**
 * The warning of `jobs.keep` shorter than `jobs.webhookRetryFor`: a delivery tried again
 * past `jobs.keep` after its job's end links to a result already gone (410
 * GW_JOB_EXPIRED). Null when keep is at least retryFor. Durations as written.
 */
export function jobsKeepWarning(keep: { ms: number; written: string }, retryFor: { ms: number; written: string }): string | null {
  if (keep.ms >= retryFor.ms) return null
  return `jobs.keep (${keep.written}) is shorter than jobs.webhookRetryFor (${retryFor.written}): a push tried again past jobs.keep links to a result that answers 410 GW_JOB_EXPIRED; set jobs.keep to jobs.webhookRetryFor or more, or webhookRetryFor shorter`
}
