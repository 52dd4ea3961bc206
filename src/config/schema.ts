import { Type, type Static } from '@sinclair/typebox'
import { DURATION_DESCRIPTION } from './duration-description.js'
import { CREDENTIAL_NAME_PATTERN, EXPIRES_AT_PATTERN, KEY_ID_PATTERN, KEY_ID_RULE, TEAM_NAME_PATTERN } from './names.js'
import { WEBHOOK_HOST_FORM } from './webhook-hosts.js'

// The single source of truth for settings: config/default.yaml, CONFIG_FILE and the
// environment are merged into this shape and validated once, at start.

const Duration = Type.Union([Type.Integer({ minimum: 0 }), Type.String({ pattern: '^\\d+(ms|s|m|h|d)$' })], {
  description: DURATION_DESCRIPTION,
})
const Size = Type.Union([Type.Integer({ minimum: 0 }), Type.String({ pattern: '^\\d+(B|KiB|MiB|GiB)$' })], {
  description: 'bytes as a number, or a string such as 64MiB',
})
const Port = Type.Integer({ minimum: 0, maximum: 65535 })
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()])
// A DNS name: labels of letters, digits, - and _, a dot at its end allowed. An IPv4 address is one too.
const DNS_NAME = '[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?(\\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?)*\\.?'

// Secrets are never read from a config file: a credential names where they live.
export const CredentialSchema = Type.Object(
  {
    baseUrl: Type.Optional(Nullable(Type.String({ pattern: '^https?://' }))),
    tokenFile: Type.Optional(Nullable(Type.String({ minLength: 1 }))),
    usernameFile: Type.Optional(Nullable(Type.String({ minLength: 1 }))),
    passwordFile: Type.Optional(Nullable(Type.String({ minLength: 1 }))),
    clientIdFile: Type.Optional(Nullable(Type.String({ minLength: 1 }))),
    clientSecretFile: Type.Optional(Nullable(Type.String({ minLength: 1 }))),
    username: Type.Optional(Nullable(Type.String({ minLength: 1 }))),
    clientId: Type.Optional(Nullable(Type.Union([Type.Integer(), Type.String({ minLength: 1 })]))),
    tokenUrl: Type.Optional(Type.String({ minLength: 1 })),
    grantType: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
)

const KeyHash = Type.String({ pattern: '^sha256:[0-9a-f]{64}$', description: 'sha256:<hex> of an API key (64 lower-case hex digits, from `npm run keys`); plaintext keys are never stored' })
// A key with a name for logs and usage, and an end.
const KeyEntry = Type.Object(
  {
    hash: KeyHash,
    id: Type.Optional(Type.String({ pattern: KEY_ID_PATTERN, description: `a key id of ${KEY_ID_RULE}` })),
    createdAt: Type.Optional(Type.String({ pattern: EXPIRES_AT_PATTERN, description: 'when the key was made: a date (2026-01-01, midnight UTC) or an ISO date-time' })),
    expiresAt: Type.Optional(Type.String({ pattern: EXPIRES_AT_PATTERN, description: 'a date (2027-01-01, midnight UTC) or an ISO date-time' })),
    // A rotation (`npm run keys -- rotate`): the old key names its successor and until
    // when it still works; the successor keeps the line's first id and names the key it replaces.
    successor: Type.Optional(Type.String({ pattern: KEY_ID_PATTERN, description: `a key id of ${KEY_ID_RULE}: the key that replaces this one` })),
    graceUntil: Type.Optional(Type.String({ pattern: EXPIRES_AT_PATTERN, description: 'a date (2027-01-01, midnight UTC) or an ISO date-time: until when a key with a successor still works' })),
    lineage: Type.Optional(Type.String({ pattern: KEY_ID_PATTERN, description: `a key id of ${KEY_ID_RULE}: the first key of the line of keys this one continues` })),
    replaces: Type.Optional(Type.String({ pattern: KEY_ID_PATTERN, description: `a key id of ${KEY_ID_RULE}: the key this one replaces` })),
  },
  { additionalProperties: false },
)

export const TeamSchema = Type.Object(
  {
    // The description sits on the item: a bad item is what the message names.
    keys: Type.Array(
      Type.Union([KeyHash, KeyEntry], { description: 'sha256:<hex> of an API key (64 lower-case hex digits, from `npm run keys`), or {hash: "sha256:<hex>", id, createdAt, expiresAt, successor, graceUntil, lineage, replaces}; plaintext keys are never stored' }),
      { description: 'a list of sha256:<hex> API key hashes or {hash, id, createdAt, expiresAt, successor, graceUntil, lineage, replaces} entries' },
    ),
    // The description sits on the item, as the keys': a bad item is what the message names. "*" beside ids is refused in teams.ts.
    advertisers: Type.Array(Type.Union([Type.Integer({ minimum: 1 }), Type.Literal('*')], { description: 'an advertiser id (a whole number, at least 1), or "*" alone for every advertiser' })),
    write: Type.Boolean({ default: false }),
    refresh: Type.Boolean({ default: false, description: 'true or false (true: the team may force a fresh copy of a report from the platform with cache-control: no-cache, at most once per cache.refreshMinAge of the report)' }),
    credential: Type.String({ minLength: 1, default: 'default' }),
    rateLimit: Type.Optional(
      Nullable(Type.Object({ max: Type.Integer({ minimum: 1 }), window: Duration }, { additionalProperties: false })),
    ),
    weight: Type.Integer({ minimum: 1, maximum: 100, default: 1, description: 'the team\'s share of its credential\'s platform calls when they queue, relative to the other teams (1-100)' }),
    maxConcurrent: Type.Optional(Type.Integer({ minimum: 1, description: 'a ceiling on the team\'s platform calls in flight at once on its credential; default none (the team may use every idle seat)' })),
    queue: Type.Optional(Type.Integer({ minimum: 1, description: 'a ceiling on the team\'s platform calls waiting for a seat, each of which takes a place there, if only for a moment; default none (the team may fill the queue; another team\'s calls displace its newest)' })),
    webhook: Type.Optional(
      Nullable(
        Type.Object(
          {
            url: Type.String({ pattern: '^https?://', description: 'an http(s) URL whose host is in jobs.webhookHosts (never the platform\'s host): each ended report job of the team is POSTed there (docs/jobs.md)' }),
            secret: Type.String({ pattern: '^whsec_(?:[A-Za-z0-9+/]{4}){6,}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$', description: 'whsec_ and the base64 of at least 18 random bytes, padded with = to a multiple of 4 characters as openssl rand -base64 writes it (a receiver\'s standard decoder, Python\'s base64.b64decode or Go\'s base64.StdEncoding, refuses it unpadded): the key of the deliveries\' Standard Webhooks signature; never logged nor answered' }),
          },
          { additionalProperties: false },
        ),
      ),
    ),
    platformSecondsPerDay: Type.Optional(Nullable(Type.Number({ exclusiveMinimum: 0, description: 'a bound on the platform-seconds (seat-time) of the team\'s calls a UTC day; past it the team is answered from the cache only, a report the cache cannot answer is 429 GW_PLATFORM_TIME_SPENT until the day ends; default none' }))),
  },
  { additionalProperties: false },
)

/** The `teams:` mapping, of the config and of a TEAMS_FILE. */
export const TeamsSchema = Type.Record(Type.String({ pattern: TEAM_NAME_PATTERN }), TeamSchema)

const RedisNode = Type.Object({ host: Type.String({ minLength: 1 }), port: Port }, { additionalProperties: false })

export const ConfigSchema = Type.Object(
  {
    host: Type.String({ minLength: 1 }),
    port: Port,
    admin: Type.Object(
      {
        host: Type.String({ minLength: 1 }),
        port: Port,
        token: Type.Optional(Nullable(Type.String({ minLength: 16 }))),
        viewerToken: Type.Optional(Nullable(Type.String({ minLength: 16 }))),
        tokensFile: Type.Optional(Nullable(Type.String({ minLength: 1 }))),
        hosts: Type.Array(
          Type.String({
            pattern: `^${DNS_NAME}$`,
            maxLength: 253,
            description: 'a DNS name (letters, digits, -, _ and dots; no port, no scheme, no wildcard), e.g. report-gateway-admin.reports.svc',
          }),
          { description: 'a list of the DNS names the admin listener answers to besides IP addresses and localhost (ADMIN_HOSTS: comma-separated)' },
        ),
        maxConnections: Type.Integer({ minimum: 1, description: 'the most connections the admin listener holds open at once (fewer where the open-file limit leaves fewer); past it the longest silent ones with no answer under way are closed, else the longest silent of those with answers under way, down to half of the bound' }),
      },
      { additionalProperties: false },
    ),
    logLevel: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l))),
    bodyLimit: Size,
    shutdownDrain: Duration,
    shutdownGrace: Duration,
    server: Type.Object(
      {
        requestTimeout: Duration,
        headersTimeout: Duration,
        keepAliveTimeout: Duration,
        connectionTimeout: Duration,
        maxConnections: Type.Integer({ minimum: 1, description: 'the most connections the proxy listener holds open at once, idle kept-alive ones included (fewer where the open-file limit leaves fewer); past it the longest silent ones with no answer under way are closed, else those of the team holding the most answers under way past its part (callers with no key counted as one team)' }),
      },
      { additionalProperties: false },
    ),
    limits: Type.Object(
      {
        reportBody: Size,
        bodyTimeout: Duration,
        jsonDepth: Type.Integer({ minimum: 1, maximum: 512 }),
        params: Type.Integer({ minimum: 1, maximum: 1000 }),
        secretSuspension: Duration,
      },
      { additionalProperties: false },
    ),
    ownership: Type.Object(
      {
        listPath: Type.String({ pattern: '^/api/v1/' }),
        perPage: Type.Integer({ minimum: 1 }),
        maxPages: Type.Integer({ minimum: 1 }),
        ttl: Duration,
        refreshMinInterval: Duration,
        fields: Type.Object(
          { data: Type.String({ minLength: 1 }), id: Type.String({ minLength: 1 }), lastPage: Type.String({ minLength: 1 }), userId: Type.String({ minLength: 1 }) },
          { additionalProperties: false },
        ),
        campaignPaths: Type.Array(
          Type.String({ pattern: '^/api/v1/.*\\{id\\}', description: 'a path under /api/v1/ with an {id} segment, e.g. /api/v1/campaign/banner/delete/{id}' }),
        ),
        accountRoutes: Type.Array(
          Type.Object(
            {
              path: Type.String({ pattern: '^/api/v1/[^{}?#]*$', description: 'a path under /api/v1/, as callers send it (no {id})' }),
              field: Type.Union(['advertiserId', 'userId'].map((f) => Type.Literal(f)), { description: 'the field the route reads its account from: in the query of a GET, HEAD or DELETE, at the top of the body otherwise' }),
            },
            { additionalProperties: false },
          ),
          { description: 'routes a scoped team may call besides the reports and ownership.campaignPaths, each with its account field' },
        ),
        creativeSets: Type.Object(
          {
            check: Type.Union(['refuse', 'lookup', 'pass'].map((c) => Type.Literal(c)), { description: 'what a scoped team\'s call naming creative sets (creativeSetIds) gets: refuse (403), lookup (each set\'s account read from listPath), pass (sent unchecked)' }),
            listPath: Nullable(Type.String({ pattern: '^/api/v1/', description: 'the platform\'s list of an account\'s creative sets, called as ownership.listPath is (check: lookup)' })),
          },
          { additionalProperties: false },
        ),
      },
      { additionalProperties: false },
    ),
    gatewaySecret: Type.Optional(Nullable(Type.String({ minLength: 16 }))),
    gatewaySecretFallback: Type.Optional(Nullable(Type.String({ minLength: 16 }))),
    platform: Type.Object(
      {
        baseUrl: Nullable(Type.String({ pattern: '^https?://' })),
        timeout: Duration,
        connections: Type.Integer({ minimum: 1 }),
        keepAliveTimeout: Duration,
        maxConcurrent: Type.Integer({ minimum: 1, maximum: 10000, description: 'the ceiling of the platform calls in flight at once per credential (the learned limit stays at or below it)' }),
        adaptive: Type.Boolean({ description: 'true: the limit in force is learned from the platform\'s latency and errors; false: it is maxConcurrent' }),
        initialConcurrent: Type.Integer({ minimum: 1, description: 'the learned limit once the first answers (at minConcurrent) measured how long each kind of call takes' }),
        minConcurrent: Type.Integer({ minimum: 1, description: 'the learned limit never goes below it; the first answers are measured at it' }),
        maxConcurrentPerReplica: Nullable(Type.Integer({ minimum: 1, description: 'each replica\'s own cap while Redis cannot be reached; null: the limit in force' })),
        seatLease: Duration,
        queue: Type.Integer({ minimum: 1, description: 'the platform calls waiting for a seat per replica; every call takes a place in it, if only for a moment' }),
        queueTimeout: Duration,
        maxPause: Duration,
        token: Type.Optional(Nullable(Type.String({ minLength: 1 }))),
        tokenFile: Nullable(Type.String({ minLength: 1 })),
        username: Nullable(Type.String({ minLength: 1 })),
        password: Type.Optional(Nullable(Type.String({ minLength: 1 }))),
        clientId: Nullable(Type.Union([Type.Integer(), Type.String({ minLength: 1 })])),
        clientSecret: Type.Optional(Nullable(Type.String({ minLength: 1 }))),
        tokenUrl: Type.String({ minLength: 1 }),
        grantType: Type.String({ minLength: 1 }),
        refreshBefore: Duration,
        expiryWarnings: Type.Array(Duration),
        tokenFilePoll: Duration,
        maintenanceInterval: Duration,
        probe: Nullable(
          Type.Object(
            { method: Type.Union([Type.Literal('GET'), Type.Literal('POST')]), path: Type.String({ pattern: '^/api/v1/' }) },
            { additionalProperties: false },
          ),
        ),
        loginMinInterval: Duration,
        // Retired: every answer is held whole within bufferTotalBytes. Taken, with a warning, until the next release.
        bufferBytes: Type.Optional(Size),
        bufferTotalBytes: Size,
        readIdleTimeout: Duration,
      },
      { additionalProperties: false },
    ),
    credentials: Type.Record(Type.String({ pattern: CREDENTIAL_NAME_PATTERN }), CredentialSchema),
    redis: Type.Object(
      {
        url: Nullable(Type.String({ pattern: '^rediss?://' })),
        sentinels: Nullable(Type.Array(RedisNode, { minItems: 1 })),
        sentinelName: Type.String({ minLength: 1 }),
        cluster: Nullable(Type.Array(RedisNode, { minItems: 1 })),
        tlsServername: Nullable(Type.String({ minLength: 1 })),
        sentinelTls: Type.Boolean(),
        sentinelPassword: Type.Optional(Nullable(Type.String({ minLength: 1 }))),
        keyPrefix: Type.String({ minLength: 1 }),
        commandTimeout: Duration,
        breakerCooldown: Duration,
        rateLimitSync: Duration,
      },
      { additionalProperties: false },
    ),
    cache: Type.Object(
      {
        enabled: Type.Boolean(),
        l1MaxBytes: Size,
        maxEntryBytes: Size,
        reportFields: Type.Array(Type.String({ minLength: 1 }), {
          description: 'what a platform 200 must hold to be a report (stored, and a job\'s result): [] any JSON object or array but Laravel\'s error body (only message, errors, exception, file, line, trace) and a problem document (application/problem+json); a list of field names, an object holding one of them and no problem document; [*] any JSON',
        }),
        keyVersion: Type.Integer({ minimum: 1 }),
        ttl: Type.Object({ recent: Duration, settled: Duration }, { additionalProperties: false }),
        settledAfterDays: Type.Integer({ minimum: 0 }),
        timeZone: Type.String({ minLength: 1 }),
        staleWhileRevalidate: Duration,
        staleIfError: Duration,
        lockTtl: Duration,
        // Refresh ahead of popular entries (docs/refresh-ahead.md): true or false; a number is
        // read as before it was a switch, 0 off and any fraction on (its timing is derived).
        refreshAhead: Type.Union([Type.Boolean(), Type.Number({ minimum: 0, exclusiveMaximum: 1 })]),
        // A forced refresh (a team's refresh: true) of a copy younger than this is answered with that copy; 0: none is.
        refreshMinAge: Duration,
        maxRangeDays: Type.Integer({ minimum: 1 }),
      },
      { additionalProperties: false },
    ),
    teams: TeamsSchema,
    teamsReload: Type.Object({ poll: Duration }, { additionalProperties: false }),
    usage: Type.Object({ flush: Duration, retentionDays: Type.Integer({ minimum: 1, maximum: 3660 }) }, { additionalProperties: false }),
    jobs: Type.Object(
      {
        maxOpenPerTeam: Type.Integer({ minimum: 1, description: 'report jobs a team may have queued or running at once (more: 429 GW_JOBS_FULL)' }),
        maxKeptPerTeam: Type.Integer({ minimum: 1, description: 'report jobs a team keeps at once, open and ended until dropped (more: 429 GW_JOBS_FULL)' }),
        maxWaitsPerTeam: Type.Integer({ minimum: 1, description: 'status calls of one team held open at once by ?wait on a replica (more: 429 GW_WAITS_FULL)' }),
        maxWaits: Type.Integer({ minimum: 1, description: 'status calls held open at once by ?wait on a replica, every team\'s (more: 429 GW_WAITS_FULL)' }),
        resultBytesPerTeam: Size,
        resultsRoom: Nullable(Size),
        keep: Duration,
        lease: Duration,
        poll: Duration,
        perReplica: Type.Integer({ minimum: 1, description: 'report jobs one replica runs at once (each waits for a platform seat like any call)' }),
        retry: Duration,
        retries: Type.Integer({ minimum: 0, maximum: 100, description: 'how often a report job is tried again after a try that got no answer or the platform\'s 5xx, each after the pauses\' backoff (1 s doubling, at most platform.maxPause); past it the job fails' }),
        // Each is compared with a webhook URL's host as the URL parser writes it (an IPv6
        // address in brackets): an entry of another form (a port, a scheme, a path) equals
        // no URL's host, so it is refused here rather than every webhook refused as not listed;
        // one of a host's shape that a URL writes otherwise (`0x7f.0.0.1`) is refused at load
        // (config/normalize.ts), saying how a URL writes it.
        webhookHosts: Type.Array(
          Type.String({
            pattern: `^(${DNS_NAME}|\\[[0-9A-Fa-f:.]+\\])$`,
            maxLength: 253,
            description: WEBHOOK_HOST_FORM,
          }),
          { description: 'the hosts teams\' webhooks may point at; empty: webhooks off' },
        ),
        webhookTimeout: Duration,
        webhookRetryFor: Duration,
        deliveriesPerTeam: Type.Integer({ minimum: 1, description: 'webhook deliveries kept per team in the outbox (GET /admin/jobs); the oldest beyond are dropped, pending or not' }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
)

export type RawConfig = Static<typeof ConfigSchema>
export type RawTeam = Static<typeof TeamSchema>
export type RawCredential = Static<typeof CredentialSchema>
