// The durations and sizes with a least value: below it the gateway cannot do what the
// setting is for, so its load stops (exit 78) naming the setting, what it holds and the
// value. The chart's values.schema.json refuses the same values at install
// (scripts/chart-config-schema.mjs reads this table, as Node runs it: it imports nothing).

export interface SettingFloor {
  readonly path: readonly string[]
  readonly kind: 'duration' | 'size'
  /** Milliseconds or bytes. */
  readonly least: number
  readonly written: string
  /** What the setting holds, told after its floor; none where its name says it. */
  readonly holds?: string
}

const CALLER_DEADLINE = "Node reads 0 as no deadline at all"

export const SETTING_FLOORS: readonly SettingFloor[] = [
  // Node reads a caller deadline of 0 as none: a typo'd 0s would let a caller hold a request
  // or an idle connection open for ever.
  { path: ['server', 'requestTimeout'], kind: 'duration', least: 100, written: '100ms', holds: `the whole request, headers and body, is cut off past it; ${CALLER_DEADLINE}` },
  { path: ['server', 'headersTimeout'], kind: 'duration', least: 100, written: '100ms', holds: `the request line and headers are cut off past it; ${CALLER_DEADLINE}` },
  { path: ['server', 'keepAliveTimeout'], kind: 'duration', least: 100, written: '100ms', holds: `an idle kept-alive caller connection is closed past it; ${CALLER_DEADLINE}` },
  // Its holder renews the fill lock every third of it: shorter would be renewals all the time.
  { path: ['cache', 'lockTtl'], kind: 'duration', least: 100, written: '100ms' },
  // Renewed every third of it: shorter would be renewals all the time.
  { path: ['platform', 'seatLease'], kind: 'duration', least: 300, written: '300ms' },
  // A call's whole budget: 0s sends no call (each is 504, not sent for its deadline).
  { path: ['platform', 'timeout'], kind: 'duration', least: 100, written: '100ms', holds: "a platform call's whole budget, connecting and its answer received whole" },
  { path: ['platform', 'readIdleTimeout'], kind: 'duration', least: 100, written: '100ms' },
  // Fastify refuses a body limit of 0 (its stack trace, exit 1); undici an idle time of 0 (every platform call 502).
  { path: ['bodyLimit'], kind: 'size', least: 1, written: '1B', holds: 'the largest request body a caller may send' },
  { path: ['platform', 'keepAliveTimeout'], kind: 'duration', least: 1, written: '1ms', holds: 'how long an idle connection to the platform is kept for the next call' },
  // Below the room of one report body (limits.reportBody's default), most answers would be larger than all of it: 502.
  { path: ['platform', 'bufferTotalBytes'], kind: 'size', least: 64 * 1024, written: '64KiB', holds: 'the answers and request bodies under way are held in it, and an answer larger than all of it is 502 GW_UPSTREAM' },
  // A file poll re-reads the watched files each time: 0s is a busy loop (an idle replica
  // spent a third of a core on platform.tokenFilePoll: 0s).
  { path: ['teamsReload', 'poll'], kind: 'duration', least: 100, written: '100ms' },
  { path: ['platform', 'tokenFilePoll'], kind: 'duration', least: 100, written: '100ms' },
  // Job durations that cannot work: an idle replica looks for jobs once a lease and its
  // runner renews every third of it (1ms: a thousand Redis calls a second); a result kept
  // 0s is expired as its job ends; a webhook attempt of 0s ends before its request.
  { path: ['jobs', 'lease'], kind: 'duration', least: 1000, written: '1s' },
  { path: ['jobs', 'keep'], kind: 'duration', least: 60_000, written: '1m' },
  { path: ['jobs', 'webhookTimeout'], kind: 'duration', least: 100, written: '100ms' },
]
