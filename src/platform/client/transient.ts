// A platform failure a later try may not meet: the call got no answer (a connection
// refused, reset or closed, the platform's timeout), the platform answered a 5xx or a 200
// that is a page rather than JSON or JSON that holds no report (reports/report-fetcher.ts), the
// credential has no token because its password login got no answer or a 5xx (platform-client.ts),
// or the answer found no room in platform.bufferTotalBytes (answer-buffer.ts: the readers free it). A report
// job that meets one is tried again later (jobs/job-runner.ts); any other failure (a 4xx,
// a token or a login refused, JSON under another content type, a call not sent for its deadline,
// the gateway's own refusal) fails the same way again and ends the job at once.

/** Marks `err` as such a failure; returns it. */
export function transient<E extends Error>(err: E): E {
  return Object.assign(err, { transient: true })
}

/** Whether `err` is marked as such a failure. */
export function isTransient(err: unknown): boolean {
  return (err as { transient?: unknown } | null)?.transient === true
}
