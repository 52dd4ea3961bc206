import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import { CounterTallies, TalliedHistogram } from '../perf/metric-tally.js'

/** A key's remaining lifetime, by the names a label may carry: its team and id, never its hash. */
export interface KeyLifetime {
  team: string
  /** The key's id. */
  key: string
  secondsLeft: number
}

/**
 * The process's own metrics (CPU, memory, the event loop's delay, garbage collection),
 * collected once a process: prom-client's collectors watch the process for as long as it
 * runs (a GC observer and an event-loop histogram that nothing stops), so a set made per
 * gateway would keep every gateway the process ever built, closed or not. Each gateway's
 * /metrics shows this one set beside its own.
 */
let processMetrics: Registry | undefined
function processRegistry(): Registry {
  if (processMetrics) return processMetrics
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'gateway_process_' })
  // prom-client names these three gauges *_total, which `promtool check metrics` (and any
  // CI lint on it) refuses: a _total suffix means a counter. Each is the sum of its
  // labelled sibling (gateway_process_nodejs_active_handles{type} ...), so nothing is lost.
  for (const name of ['handles', 'requests', 'resources']) registry.removeSingleMetric(`gateway_process_nodejs_active_${name}_total`)
  processMetrics = registry
  return registry
}

// The gateway's own metrics in a registry per gateway instance, so two instances in one
// test process do not share counters.
export function createMetrics() {
  const registry = new Registry()
  // Counted on every request, cache hits included: see metric-tally.ts.
  const requests = new CounterTallies<'route' | 'status'>()
  const cacheRequests = new CounterTallies<'result' | 'tier'>()
  // The running keys, read at every scrape: keys a teams reload adds or removes show at the next one.
  let keyLifetimes: () => Iterable<KeyLifetime> = () => []
  // A metric of this registry with no collect step of its own: its name, help and labels.
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) => new Counter<L>({ name, help, labelNames, registers: [registry] })
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) => new Gauge<L>({ name, help, labelNames, registers: [registry] })
  const metrics = {
    /** Children of gateway_requests_total. */
    requests,
    requestsCounter: new Counter({
      name: 'gateway_requests_total',
      help: 'Requests answered on the proxy listener, by route kind and status',
      labelNames: ['route', 'status'] as const,
      registers: [registry],
      collect() {
        requests.flush(this)
      },
    }),
    requestDuration: new TalliedHistogram<'route'>({
      name: 'gateway_request_duration_seconds',
      help: 'Time to answer a proxy-listener request',
      labelNames: ['route'] as const,
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    upstreamDuration: new Histogram({
      name: 'gateway_upstream_duration_seconds',
      help: 'Time of platform calls made for report cache fills',
      labelNames: ['status'] as const,
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    /** Children of gateway_cache_requests_total. */
    cacheRequests,
    cacheRequestsCounter: new Counter({
      name: 'gateway_cache_requests_total',
      help: 'Report cache lookups by result (HIT, MISS, STALE, REFRESH, BYPASS) and the tier that answered (l1, l2, platform)',
      labelNames: ['result', 'tier'] as const,
      registers: [registry],
      collect() {
        cacheRequests.flush(this)
      },
    }),
    buildInfo: gauge('gateway_build_info', 'Always 1: the version and commit of the running gateway and the Node running it, as labels', ['version', 'commit', 'node']),
    copiesOverPart: counter('gateway_cache_copies_over_part_total', 'Report copies a team\'s fill kept out of Redis (in its replica\'s memory only) because the team\'s copies there take its part of the room (what the job results\' room, jobs.resultsRoom or the smaller of half of Redis\' maxmemory and teams × jobs.resultBytesPerTeam, leaves of maxmemory, split evenly among the teams), by team', ['team']),
    refreshAhead: counter('gateway_cache_refresh_ahead_total', 'Background refreshes of popular report entries before they expire, by outcome: started, completed, failed, skipped (no idle platform seat, or another replica refreshed it)', ['outcome']),
    jobWaits: gauge('gateway_report_job_waits', 'Status calls of report jobs held open by ?wait on this replica now, by team (at most jobs.maxWaitsPerTeam each, jobs.maxWaits in all)', ['team']),
    reportJobs: counter('gateway_report_jobs_total', 'Report job runs on this replica, by outcome: started, done, failed, requeued (no seat in time, the platform\'s 429 or its pause, a shutdown, its lease ran out unrenewed before its call was sent, or a try that got no answer or a 5xx, tried again within jobs.retries), lost (another replica took the job over once this one\'s lease ran out)', ['outcome']),
    platformCalls: counter('gateway_platform_calls_total', 'Calls sent to the platform, by call (report: a report fill; proxy: any other call a caller made) and outcome (a report fill: entry, pass, oversize or its GW_* code; a proxied call: pass for an answer passed on, GW_UPSTREAM for a 5xx, its GW_* code when it got none, dropped when its caller left)', ['call', 'outcome']),
    rateLimited: counter('gateway_rate_limited_total', 'Requests refused by a team rate limit', ['team']),
    teamSuspensions: counter('gateway_team_suspensions_total', "Requests of a team refused for holding a secret of the gateway's, each suspending the team (limits.secretSuspension), on the replica that refused it", ['team']),
    tokenSecondsLeft: gauge('gateway_platform_token_seconds_left', 'Seconds until the platform token of each credential expires', ['credential']),
    tokenUsable: gauge('gateway_platform_token_usable', '1 while the credential holds a token the platform has not refused', ['credential']),
    tokenChanges: counter('gateway_platform_token_changes_total', 'Platform token changes by credential and reason', ['credential', 'reason']),
    tokenAnnouncements: counter('gateway_platform_token_announcements_total', 'Announcements of a change of a credential\'s token heard on the bus (this replica\'s own among them) and acted on: the token Redis holds read, then taken, kept or stored again', ['credential']),
    tokenChecks: counter('gateway_platform_token_checks_total', 'Checks of a credential\'s token done by the maintenance tick (platform.maintenanceInterval): its expiry warnings, its scheduled re-login, the refused token\'s error line, the login retried while there is no token', ['credential']),
    tokenFileReads: counter('gateway_platform_token_file_reads_total', 'Reads of a credential\'s token file done, at each change its folder\'s watch sees and every platform.tokenFilePoll (one that found the file unreadable or empty among them): the token in use changes only where the file\'s content did', ['credential']),
    platformQueued: gauge('gateway_platform_queued_calls', 'Places in the queues of a credential on this replica taken by platform calls waiting for a seat: a report fill shared by callers of several teams takes one in the queue of each (the sum of gateway_platform_waiting_calls over teams)', ['credential']),
    platformInFlight: gauge('gateway_platform_in_flight_calls', 'Platform calls in flight on this replica, by credential (at most platform.maxConcurrent)', ['credential']),
    platformRefused: counter('gateway_platform_refused_total', 'Calls refused before reaching the platform, by credential and reason (queue_full, team_queue_full: a team ceiling, displaced: pushed out of a full queue by a team with fewer calls waiting, queue_timeout, paused, count: a team past its share of the platform count of the token calls: GW_OVERLOADED; deadline: it could not end before its deadline, GW_UPSTREAM_TIMEOUT)', ['credential', 'reason']),
    platformSeatsHeld: gauge('gateway_platform_seats_held', 'Platform seats this replica holds, by credential (leased in Redis across replicas, or its calls in flight without it)', ['credential']),
    platformPermitsHeld: gauge('gateway_platform_permits_held', 'Deprecated, the same as gateway_platform_seats_held: removed in the next release', ['credential']),
    platformWaiting: gauge('gateway_platform_waiting_calls', 'Places in the queue of each team on this replica taken by platform calls waiting for a seat, by credential and team: a report fill shared by callers of several teams waits in the queue of each, and counts for each', ['credential', 'team']),
    platformSeatsLost: counter('gateway_platform_seats_lost_total', 'Leased seats of calls still running that Redis had lost (a restart, a lapse while it could not be reached): asked for again', ['credential']),
    platformPermitsLost: counter('gateway_platform_permits_lost_total', 'Deprecated, the same as gateway_platform_seats_lost_total: removed in the next release', ['credential']),
    platformLimit: gauge('gateway_platform_concurrency_limit', 'The limit in force of platform calls in flight at once, by credential: learned from the platform (platform.adaptive), or platform.maxConcurrent', ['credential']),
    platformKnee: gauge('gateway_platform_knee', 'The most calls the platform serves at once, as the learned limit knows it, by credential (the limit goes a step past it to probe, below it while the platform fails)', ['credential']),
    platformLatencyFloor: gauge('gateway_platform_latency_floor_seconds', 'The latency with a free worker of the kind of call answered most, by credential: what a queue is measured from', ['credential']),
    platformLimitChanges: counter('gateway_platform_concurrency_limit_changes_total', 'Changes of the learned limit made on this replica, by credential and direction (up, down, cut: halved while the platform fails)', ['credential', 'direction']),
    platformPauses: counter('gateway_platform_pauses_total', 'Pauses of a credential after a platform 429 that began on this replica (its own 429 or another replica telling it)', ['credential']),
    platformRetries: counter('gateway_platform_retries_total', 'Read calls sent to the platform again after a 502, 503, 504 or a reset connection', ['credential']),
    platformUnauthorized: counter('gateway_platform_unauthorized_total', 'Platform 401 answers to calls, by credential and what the probe call said of the token (confirmed: refused; unconfirmed: accepted, the call alone was refused; probe_failed; no_probe)', ['credential', 'verdict']),
    platformSlowReaders: counter('gateway_platform_slow_readers_total', 'Answers cut off because their caller took none of them for platform.readIdleTimeout, or, while another team needed the room, nothing for a second or too little to give it back within platform.readIdleTimeout: the memory they held is free', ['credential']),
    answerBytes: gauge('gateway_answer_bytes', 'Bytes of the answers on their way to callers and of the request bodies under way held on this replica (at most platform.bufferTotalBytes)'),
    answerRefusals: counter('gateway_answer_budget_refusals_total', 'Platform answers refused 503 GW_ANSWER_BUDGET: platform.bufferTotalBytes held by answers on their way to callers, none of which could be cut off', ['credential']),
    teamRequests: counter('gateway_team_requests_total', 'Requests answered per team, by result (hit: answered by the cache; ok; rate_limited; refused: other 4xx; error: 5xx)', ['team', 'result']),
    teamPlatformCalls: counter('gateway_team_platform_calls_total', 'Platform calls made for each team (report fills, whose coalesced waiters count for the leader, and proxied calls)', ['team']),
    apiKeyExpiry: new Gauge({
      name: 'gateway_api_key_expiry_seconds',
      help: 'Seconds until each API key with an expiresAt expires, by team and key id; negative once it has expired (the key is refused, and listed until it is removed from the teams); keys without expiresAt are not listed',
      labelNames: ['team', 'key'] as const,
      registers: [registry],
      collect() {
        this.reset()
        for (const { team, key, secondsLeft } of keyLifetimes()) this.set({ team, key }, secondsLeft)
      },
    }),
    /** Where gateway_api_key_expiry_seconds reads the running keys from. */
    watchKeyLifetimes(source: () => Iterable<KeyLifetime>): void {
      keyLifetimes = source
    },
    configReloads: counter('gateway_config_reloads_total', 'Reloads of the teams from CONFIG_FILE or TEAMS_FILE, by result (applied, unchanged, refused)', ['result']),
    configProblems: counter('gateway_config_reload_problems_total', 'Problems found in refused reloads of the teams (one log line each)'),
    configReloadOk: gauge('gateway_config_last_reload_successful', '0 while the reload of the files the teams come from (CONFIG_FILE, TEAMS_FILE, ADMIN_TOKENS_FILE, token files) is refused: the running teams and admin tokens are not the files\' (retried every teamsReload.poll)'),
    redisUp: gauge('gateway_redis_up', '1 while Redis is used, 0 while the circuit breaker keeps it out or without Redis (REDIS_URL unset)'),
    redisClockOffset: gauge('gateway_redis_clock_offset_seconds', 'How far Redis\' clock is ahead of this replica\'s (negative: behind), as last read (at the start, then every minute): the times replicas share (report jobs\' leases, webhook claims, announcements, rate-limit windows, token changes, platform pauses) are on Redis\' clock; 0 without Redis'),
    redisUnverified: counter('gateway_redis_unverified_total', 'Values read from Redis that do not carry this gateway\'s seal (GATEWAY_SECRET), or that are more than the gateway stores, ignored: by what (entry: a report entry, read as a miss; message: a bus message, also one heard before; pause: a stored pause; purge: a field of the purge record; replica: a replica\'s announcement, left out of GET /admin/cluster; key-use: a key use record; job: a report job record; owner-list: a list of an advertiser\'s campaigns or creative sets, read as none; suspension: a team\'s suspension, not obeyed; count: a replica\'s record of the platform\'s count, not heard; token: the stored platform token\'s record, which neither GATEWAY_SECRET nor GATEWAY_SECRET_FALLBACK opens, not taken)', ['what']),
    redisWritable: gauge('gateway_redis_writable', '0 while Redis answers reads but refuses writes (OOM, READONLY, MISCONF): entries are read, none written; 1 otherwise; 0 without Redis (REDIS_URL unset), as gateway_redis_up'),
    redisSkippedWrites: counter('gateway_redis_skipped_writes_total', 'Writes to Redis not sent because Redis refuses writes (cache entries, fill locks)'),
    connectionsClosedAtBound: counter(
      'gateway_connections_closed_at_bound_total',
      'Connections closed because a connection came past its listener\'s bound (server.maxConnections, admin.maxConnections, or fewer where the open-file limit leaves fewer), by listener (proxy, admin) and which (idle: the longest silent with no answer under way, closed to make room; busy: with none idle, the longest silent of the team holding the most answers under way past its part of the bound (callers with no key counted as one team), its answer cut to make room; new: the one that came, closed unanswered as every other had an answer under way and no team was past its part)',
      ['listener', 'which'],
    ),
    connectionsBound: gauge('gateway_connections_bound', 'The most connections a listener holds open at once, by listener (proxy, admin): server.maxConnections or admin.maxConnections, or fewer where the open-file limit leaves fewer', ['listener']),
    platformUnusable: counter('gateway_platform_unusable_answers_total', 'Platform 200 answers to report reads that are not a JSON report, neither stored nor served (502 GW_UPSTREAM or a stale copy), by what their body is (html, empty, truncated-json, mislabelled-json, no-report: JSON that holds no report by cache.reportFields, other)', ['kind']),
  }
  /** What GET /metrics shows: the process's metrics, then this gateway's. */
  return { ...metrics, registry: Registry.merge([processRegistry(), registry]) }
}

export type Metrics = ReturnType<typeof createMetrics>
