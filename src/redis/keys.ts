// Every Redis key the gateway writes, in one place: each starts with the configured
// prefix (`redis.keyPrefix`), so replicas of one deployment share them and another
// deployment on the same Redis sees none. A part in braces is a Cluster hash tag: keys
// one script or MULTI uses together share it, so they sit in one slot.

/**
 * `text` as a SCAN pattern that matches itself alone: the prefix is any string, and its
 * `*`, `?`, `[`, `]` or `\` would otherwise match another deployment's keys, or miss its own.
 */
function literalPattern(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&')
}

/** The hash tag of the report jobs' keys: the job results live on the master of its slot. */
export const JOBS_TAG = '{jobs}'
/** The hash tag of the records of the room report copies take: every copy's record sits on the master of its slot. */
export const COPY_ROOM_TAG = '{room}'

/** Names the gateway's Redis keys under one prefix. */
export const redisKey = {
  /** The breaker's write probe. */
  writeProbe: (prefix: string) => `${prefix}write-probe`,
  /** The pub/sub channels' common start; the channel name follows. */
  bus: (prefix: string) => `${prefix}bus:`,
  /** The purge ledger shared by the replicas. */
  purges: (prefix: string) => `${prefix}purges`,
  /** A credential's pauses after platform 429s: a field per scope (the credential, a team, a route, a team on a route). */
  pauses: (prefix: string, credential: string) => `${prefix}pauses:{${credential}}`,
  /** The teams suspended for a secret of the gateway's in a request: a field per team, its end. */
  suspensions: (prefix: string) => `${prefix}suspensions`,
  /** A credential's platform count as the replicas share it out: a field per replica run, written while it does (count-sync.ts). */
  counts: (prefix: string, credential: string) => `${prefix}counts:{${credential}}`,
  /** The same of a route throttled on its own (`route`: its hash, credential-counts.ts). */
  routeCounts: (prefix: string, credential: string, route: string) => `${prefix}counts:{${credential}}:route:${route}`,
  /** A credential's seats leased by the replicas: a field per replica run. */
  seats: (prefix: string, credential: string) => `${prefix}seats:{${credential}}`,
  /** The lock one replica holds while it logs a credential in. */
  loginLock: (prefix: string, credential: string) => `${prefix}login-lock:${credential}`,
  /** When a credential last logged in. */
  loginLast: (prefix: string, credential: string) => `${prefix}login-last:${credential}`,
  /** A credential's token (sealed). */
  token: (prefix: string, credential: string) => `${prefix}token:${credential}`,
  /** The lock of one cache entry's fill, `entry` being the entry's own key. */
  fillLock: (prefix: string, entry: string) => `${prefix}lock:${entry}`,
  /** A cached report, by cache version and digest. */
  report: (prefix: string, version: number, digest: string) => `${prefix}report:v${version}:${digest}`,
  /** What SCAN matches to find every cached report. */
  reportPattern: (prefix: string) => `${literalPattern(prefix)}report:*`,
  /** One advertiser's cached reports: a sorted set of their keys, each scored by when it expires. */
  advertiserIndex: (prefix: string, advertiserId: number) => `${prefix}adv-entries:${advertiserId}`,
  /** What SCAN matches to find every advertiser's index. */
  advertiserIndexPattern: (prefix: string) => `${literalPattern(prefix)}adv-entries:*`,
  /** The report copies the teams' fills keep in Redis: a sorted set of their keys, each scored by when it expires (one hash slot for the three records of the copies' room). */
  copyExpiries: (prefix: string) => `${prefix}copies:${COPY_ROOM_TAG}`,
  /** The bytes and team each of those copies is counted on (a field per copy key: `<bytes> <team>`). */
  copyOwners: (prefix: string) => `${prefix}copies:${COPY_ROOM_TAG}:owners`,
  /** Each team's sum of the bytes its copies take (a field per team). */
  copySums: (prefix: string) => `${prefix}copies:${COPY_ROOM_TAG}:sums`,
  /** One team's usage of one day: a field per count (`requests`, `rateLimited`, …); each team's days in a hash slot of its own. */
  usage: (prefix: string, team: string, day: string) => `${prefix}usage:{${team}}:${day}`,
  /** The teams with usage on one day (a set of their names). */
  usageTeams: (prefix: string, day: string) => `${prefix}usage-teams:${day}`,
  /** One day's usage as versions before per-team keys wrote it, a field per team and count (`growth:requests`): read and added until it expires. */
  usageDayShared: (prefix: string, day: string) => `${prefix}{usage}:${day}`,
  /** One team's request count in one rate-limit window: each team's windows in a hash slot of its own. */
  rateLimit: (prefix: string, team: string, window: number | string) => `${prefix}rl:{${team}}:${window}`,
  /** The replicas' announcements by last announcement (a sorted set of their ids): one hash slot with the announcements, so one MULTI writes both. */
  replicas: (prefix: string) => `${prefix}{replicas}:index`,
  /** One replica's announcement (sealed), which lives for its TTL unless announced again. */
  replica: (prefix: string, id: string) => `${prefix}{replicas}:replica:${id}`,
  /** One replica's last hour (sealed), written when a cluster view asks: one hash slot with the announcements, so one pipeline reads them all. */
  replicaHistory: (prefix: string, id: string) => `${prefix}{replicas}:history:${id}`,
  /** One replica's buckets of its last hour: a field per place in the ring (sealed), each written as its bucket closes; one hash slot with the announcements, so the announcement's MULTI writes it. */
  replicaBuckets: (prefix: string, id: string) => `${prefix}{replicas}:buckets:${id}`,
  /** The replicas whose key use is kept, by their last write (a sorted set of their ids): one hash slot with the records, so one MULTI writes both. */
  keyUseIndex: (prefix: string) => `${prefix}{keyuse}:index`,
  /** One replica's key use: a field per key id (sealed), kept for a while after its last write. */
  keyUse: (prefix: string, replica: string) => `${prefix}{keyuse}:replica:${replica}`,
  /** The keys a reload removed: a field per key id (sealed), each kept 30 days after its removal; one hash slot with the key use. */
  keyUseRemoved: (prefix: string) => `${prefix}{keyuse}:removed`,
  /** A report job (sealed); every key of the jobs shares the hash tag JOBS_TAG, so that one script changes several (and redis/memory-room.ts finds their master by it). */
  job: (prefix: string, id: string) => `${prefix}${JOBS_TAG}:job:${id}`,
  /** The open jobs (queued, running) by when a runner may start each (a queued one's time, a running one's lease end): a sorted set of their ids. */
  dueJobs: (prefix: string) => `${prefix}${JOBS_TAG}:due`,
  /** One team's jobs: a sorted set of their ids, an open job's score above any time, an ended one's its drop time. */
  teamJobs: (prefix: string, team: string) => `${prefix}${JOBS_TAG}:team:${team}`,
  /** The teams that have a set of jobs (teamJobs), for the store's sweep. */
  jobTeams: (prefix: string) => `${prefix}${JOBS_TAG}:teams`,
  /** The report a job ended with (sealed), kept until its expiry. */
  jobResult: (prefix: string, id: string) => `${prefix}${JOBS_TAG}:result:${id}`,
  /** How many results each team's job ends kept, a field per team: a job's end that checked its team's bound at one count keeps its result only at that count (redis-job-store.ts). */
  jobResultEnds: (prefix: string) => `${prefix}${JOBS_TAG}:result-ends`,
  /** A webhook delivery of an ended job (sealed), in the outbox with the jobs' hash tag. */
  delivery: (prefix: string, id: string) => `${prefix}${JOBS_TAG}:delivery:${id}`,
  /** The pending deliveries by when a deliverer may claim each (its next attempt, or its claim's end): a sorted set of their ids. */
  dueDeliveries: (prefix: string) => `${prefix}${JOBS_TAG}:deliveries:due`,
  /** One team's deliveries by when each was made: its bound (jobs.deliveriesPerTeam) drops the oldest. */
  teamDeliveries: (prefix: string, team: string) => `${prefix}${JOBS_TAG}:deliveries:team:${team}`,
  /** Every team's deliveries by when each was made: GET /admin/jobs reads the newest. */
  deliveries: (prefix: string) => `${prefix}${JOBS_TAG}:deliveries`,
  /** A campaign's owning advertiser, `campaign` being the owner cache's key. */
  owner: (prefix: string, campaign: string) => `${prefix}owners:${campaign}`,
} as const
