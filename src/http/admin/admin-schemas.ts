import { MAX_USAGE_DAYS, USAGE_COLUMNS } from './admin-usage.js'

// What the admin calls take and answer, as JSON Schema. The token body is checked by
// Fastify; the answers' schemas describe them in the admin listener's OpenAPI document
// (openapi/admin-document.ts), whose tests check real answers against them. The answers
// of /admin/status, /admin/audit and /admin/cluster are described by the schemas their
// routes serialize with (admin-status.ts, cluster-route.ts).

const nullable = (type: string, description: string) => ({ type: [type, 'null'], description })
const instant = (description: string) => ({ type: ['string', 'null'], format: 'date-time', description })

/** PUT /admin/token and PUT /admin/credentials/{name}/token. */
export const tokenBody = {
  type: 'object',
  required: ['token'],
  additionalProperties: false,
  // Printable ASCII, no inner whitespace (it goes into a header); surrounding whitespace
  // (a pasted newline) is trimmed, and what is left must still be a plausible token.
  properties: {
    token: { type: 'string', maxLength: 8192, pattern: '^\\s*[!-~]{8,}\\s*$', description: 'the platform token: 8 to 8192 printable ASCII characters, no spaces inside' },
  },
} as const

const tokenFields = {
  source: {
    type: ['string', 'null'],
    enum: ['static', 'file', 'login', 'admin', 'shared', null],
    description: 'Where the token in use came from: `PLATFORM_TOKEN` (`static`), its file (`file`), the password login (`login`), `PUT …/token` (`admin`), another replica through Redis (`shared`); null without a token.',
  },
  fingerprint: nullable('string', 'A short hash of the token, the same in logs and audit lines; never the token.'),
  obtainedAt: instant('When this replica got the token.'),
  expiresAt: instant('When the token expires, as far as the gateway knows.'),
  secondsLeft: nullable('integer', 'Seconds until `expiresAt`.'),
  usable: { type: 'boolean', description: 'false: no token, or the platform refused it (its probe call confirmed it).' },
} as const
const TOKEN_FIELDS = Object.keys(tokenFields)

/** GET /admin/token, POST …/token/refresh. */
export const tokenViewSchema = { type: 'object', required: TOKEN_FIELDS, properties: tokenFields } as const

/** PUT /admin/token: the token's view, and whether it changed. */
export const tokenChangeSchema = {
  type: 'object',
  required: [...TOKEN_FIELDS, 'changed'],
  properties: {
    ...tokenFields,
    changed: { type: 'boolean', description: 'false: the offered token is the one in use; nothing was probed or changed (not even `obtainedAt`).' },
  },
} as const

/** GET /admin/credentials. */
export const credentialsSchema = {
  type: 'object',
  required: ['credentials'],
  properties: {
    credentials: {
      type: 'array',
      items: { type: 'object', required: ['name', ...TOKEN_FIELDS], properties: { name: { type: 'string', description: 'The credential: `default`, or a name under `credentials:`.' }, ...tokenFields } },
    },
  },
} as const

/** DELETE /admin/cache. */
export const purgeSchema = {
  type: 'object',
  required: ['purged', 'dropped'],
  properties: {
    purged: { type: 'string', enum: ['all', 'advertiser'] },
    advertiserId: { type: 'integer', minimum: 1, description: 'With `purged: advertiser`: whose entries were dropped.' },
    dropped: { type: 'integer', minimum: 0, description: 'Entries dropped from Redis (from this replica\'s memory without Redis).' },
  },
} as const

/** POST /admin/reload. */
export const reloadSchema = {
  type: 'object',
  required: ['result', 'teams', 'keys', 'addedKeys', 'removedKeys'],
  properties: {
    result: { type: 'string', enum: ['applied', 'unchanged'], description: '`unchanged`: the files say what is already in use.' },
    teams: { type: 'array', items: { type: 'string' }, description: 'The teams now in use.' },
    keys: { type: 'integer', minimum: 0, description: 'How many keys they hold.' },
    addedKeys: { type: 'array', items: { type: 'string' }, description: 'Keys added, as `<team>/<key id>`.' },
    removedKeys: { type: 'array', items: { type: 'string' }, description: 'Keys removed, as `<team>/<key id>`.' },
  },
} as const

const count = (description: string) => ({ type: 'integer', minimum: 0, description })

/** One team's totals of one UTC day; the CSV form has one column per field, in this order. */
export const usageRowSchema = {
  type: 'object',
  required: [...USAGE_COLUMNS],
  properties: {
    day: { type: 'string', format: 'date', description: 'The UTC day, `YYYY-MM-DD`.' },
    team: { type: 'string', description: 'The team, or `(gateway)` for the gateway\'s own platform calls.' },
    requests: count('Answers to the team\'s calls on the proxy listener, errors and 429s included.'),
    cacheHits: count('Report reads answered without a platform call of their own (from the cache, or by joining another caller\'s call).'),
    platformCalls: count('Calls the gateway made to the platform for the team.'),
    platformCallsSaved: count('`cacheHits`: each such read would have been one platform call without the cache.'),
    bytes: count('Bytes written to the team\'s connections for its answers (status line, headers, body).'),
    rateLimited: count('Answers with status 429: the team\'s rate limit (`GW_RATE_LIMITED`), or the platform\'s 429 passed through.'),
    errors: count('Answers with a 5xx status (the platform failed or timed out, the queue was full, a fault of the gateway).'),
  },
} as const

/** GET /admin/usage (JSON). */
export const usageSchema = {
  type: 'object',
  required: ['from', 'to', 'usage'],
  properties: {
    from: { type: 'string', format: 'date' },
    to: { type: 'string', format: 'date' },
    usage: { type: 'array', items: usageRowSchema, description: `One row per day and team that has usage, by day then team; at most ${MAX_USAGE_DAYS} days.` },
  },
} as const

/** GET /healthz. */
export const healthSchema = { type: 'object', required: ['status'], properties: { status: { const: 'ok' } } } as const

/** GET /readyz. */
export const readySchema = {
  type: 'object',
  required: ['status', 'platformToken', 'redis', 'degraded'],
  properties: {
    status: { type: 'string', enum: ['ready', 'starting', 'stopping'] },
    platformToken: { type: 'object', additionalProperties: { type: 'string', enum: ['ok', 'rejected', 'missing'] }, description: 'Each credential\'s token.' },
    redis: { type: 'string', enum: ['ok', 'readonly', 'down', 'not configured'] },
    degraded: { type: 'array', items: { type: 'string' }, description: 'What works less well than it should: `redis`, `redis-readonly`, `platformToken:<credential>`.' },
  },
} as const
