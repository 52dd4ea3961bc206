import type { FastifySchema } from 'fastify'

// What the admin calls take and answer, as JSON Schema. Fastify validates each call's
// query, path and body against its route's schema (adminSchema: no parameter the call
// does not take, no body where it takes none) and serializes its answer with the
// answer's schema; @fastify/swagger publishes the same schemas as the admin listener's
// OpenAPI document (openapi/admin-document.ts), whose tests check real answers against it.

/** The largest body of an admin call, in bytes (admin.ts): over it, 413 GW_PAYLOAD_TOO_LARGE naming it. */
export const ADMIN_BODY_LIMIT = 64 * 1024
/** What that 413 means, in the admin document. */
export const ADMIN_BODY_TOO_LARGE = `The body is over ${ADMIN_BODY_LIMIT} bytes (64 KiB), the most an admin call takes.`

/** The tags of the admin document's operations. */
export type AdminTag = 'token' | 'cache' | 'teams' | 'state' | 'console' | 'health' | 'description'

/** One admin route: what Fastify validates, what it answers, what the document says of it. */
export interface AdminRoute {
  tag: AdminTag
  operationId: string
  summary: string
  description?: string
  /** The query parameters the call takes (none by default: any is 400). */
  query?: Record<string, unknown>
  requiredQuery?: string[]
  /** The path parameters, each required. */
  params?: Record<string, unknown>
  /** The body the call takes (none by default: a body is 400). */
  body?: Record<string, unknown>
  /** Its answers by status: schemas they are serialized with, each with its `description`. */
  response: Record<string, unknown>
  /** The GW_* codes it answers with beyond those of every admin call, with when. */
  errors?: Record<string, string>
}

/** A route's schema: query and path closed (additionalProperties false, so an unknown parameter fails), its body, its answers. */
export function adminSchema(route: AdminRoute): FastifySchema {
  const object = (properties: Record<string, unknown>, required: string[]) => ({ type: 'object', additionalProperties: false, properties, ...(required.length > 0 ? { required } : {}) })
  return {
    tags: [route.tag],
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    querystring: object(route.query ?? {}, route.requiredQuery ?? []),
    ...(route.params ? { params: object(route.params, Object.keys(route.params)) } : {}),
    ...(route.body ? { body: route.body } : {}),
    response: route.response,
    ...(route.errors ? { 'x-errors': route.errors } : {}),
  } as FastifySchema
}

// A query holds text, and a boolean there is `true` or `false`: a flag is typed as a boolean
// beside the four strings, so that a client generated from the document takes `dryRun: true`.
// The strings are what Fastify validates (a query's values are text, none coerced).
/** A flag in a query: `true`, `false`, `1` or `0`. */
const QUERY_FLAG = { type: ['boolean', 'string'], enum: [true, false, '1', 'true', '0', 'false'] } as const

/** A purge's dry run. */
export const DRY_RUN = { ...QUERY_FLAG, description: '`true` or `1`: drop nothing, answer what the purge would drop (`wouldDrop`); `false`, `0` or leaving it out: drop.' }

/** Whether a QUERY_FLAG value is on. */
export function flagOn(value: string | undefined): boolean {
  return value === '1' || value === 'true'
}

/** A JSON answer's schema with what it is. */
export const answer = (schema: Record<string, unknown>, description: string) => ({ ...schema, description })

const nullable = (type: string, description: string) => ({ type: [type, 'null'], description })
const instant = (description: string) => ({ type: ['string', 'null'], format: 'date-time', description })

/** What PUT …/token takes as `token`, in the words of its refusal (`token: must be …`). */
export const TOKEN_FORM = 'the platform token: 8 to 8192 printable ASCII characters, no spaces inside'

/** PUT /admin/token and PUT /admin/credentials/{name}/token. */
export const tokenBody = {
  type: 'object',
  required: ['token'],
  additionalProperties: false,
  // Printable ASCII, no inner whitespace (it goes into a header); surrounding whitespace
  // (a pasted newline) is trimmed, and what is left must still be a plausible token. The
  // handler checks the characters (tokenFault), so that the answer says what is wrong: a
  // `Bearer ` pasted with the token, quotes, a space, a line break.
  properties: {
    token: { type: 'string', minLength: 8, maxLength: 8192, description: TOKEN_FORM },
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
/** Where a token changed by an admin call reached, beside its view. */
const tokenReach = (when: string) =>
  ({
    type: 'string',
    enum: ['all', 'this replica only', 'this replica until Redis answers again'],
    description:
      `${when}the replicas the token reached: \`all\` (Redis took it: every replica, and those that start later), \`this replica only\` (no Redis or no \`GATEWAY_SECRET\`: until it restarts; a token file reaches every replica), \`this replica until Redis answers again\` (Redis did not take the write: the others take the token once it answers).`,
  }) as const

export const tokenChangeSchema = {
  type: 'object',
  required: [...TOKEN_FIELDS, 'changed'],
  properties: {
    ...tokenFields,
    changed: { type: 'boolean', description: 'false: the offered token is the one in use; nothing was probed or changed (not even `obtainedAt`).' },
    replicas: tokenReach('With `changed: true`, '),
  },
} as const

/** POST /admin/token/refresh: the new token's view, and where it reached. */
export const tokenRefreshSchema = {
  type: 'object',
  required: [...TOKEN_FIELDS, 'replicas'],
  properties: { ...tokenFields, replicas: tokenReach('The ') },
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
  required: ['purged', 'dryRun'],
  properties: {
    purged: { type: 'string', enum: ['all', 'advertiser', 'report'], description: 'What the purge reaches: every report, one advertiser\'s, one report.' },
    advertiserId: { type: 'integer', minimum: 1, description: 'With `purged: advertiser`: whose entries.' },
    report: { type: 'string', description: 'With `purged: report`: the report, as the gateway spells it (its canonical path and query); its entry under every credential.' },
    dryRun: { type: 'boolean', description: 'true: nothing was dropped; `wouldDrop` says what the purge would drop now.' },
    dropped: { type: 'integer', minimum: 0, description: 'Without `dryRun`: entries dropped from Redis (from this replica\'s memory without Redis).' },
    wouldDrop: { type: 'integer', minimum: 0, description: 'With `dryRun`: entries the purge would drop from Redis now (from this replica\'s memory without Redis).' },
  },
} as const

/** POST /admin/reload. */
export const reloadSchema = {
  type: 'object',
  required: ['result', 'teams', 'keys', 'addedKeys', 'removedKeys', 'restartNeeded', 'replicas'],
  properties: {
    result: { type: 'string', enum: ['applied', 'unchanged'], description: '`unchanged`: the files say what is already in use.' },
    teams: { type: 'array', items: { type: 'string' }, description: 'The teams now in use.' },
    keys: { type: 'integer', minimum: 0, description: 'How many keys they hold.' },
    addedKeys: { type: 'array', items: { type: 'string' }, description: 'Keys added, as `<team>/<key id>`.' },
    removedKeys: { type: 'array', items: { type: 'string' }, description: 'Keys removed, as `<team>/<key id>`.' },
    restartNeeded: { type: 'array', items: { type: 'string' }, description: 'The settings other than the teams and the admin tokens that the files change, by their names in the config file (`platform.seatLease`), never their values: they take effect at the next restart. Empty: none. `result` says only what the teams and admin tokens did.' },
    replicas: {
      type: 'string',
      enum: ['all', 'this replica; the others when they see the files change'],
      description: 'Whom the reload was asked of: `all` (told over Redis: each replica reloads now), or this replica alone (no Redis, or Redis did not take the message): each other replica reloads when its own look at the files (`teamsReload.poll`) sees them change.',
    },
  },
} as const

/** GET /healthz. */
export const healthSchema = { type: 'object', required: ['status'], properties: { status: { const: 'ok' } } } as const

/** GET /readyz's `status`: `ready` with 200, else the phase that keeps the replica from serving, with 503. */
export const READY_STATUS = { 200: ['ready'], 503: ['starting', 'stopping'] } as const

/** The body of GET /readyz on the proxy listener, with `status` one of `statuses`: the status alone. */
export const readyStatusSchema = (statuses: readonly string[]) =>
  ({ type: 'object', required: ['status'], additionalProperties: false, properties: { status: { type: 'string', enum: statuses } } }) as const

/** The body of GET /readyz on the admin listener, with `status` one of `statuses`. */
export const readySchema = (statuses: readonly string[]) => ({
  type: 'object',
  required: ['status', 'platformToken', 'redis', 'degraded'],
  properties: {
    status: readyStatusSchema(statuses).properties.status,
    platformToken: { type: 'object', additionalProperties: { type: 'string', enum: ['ok', 'rejected', 'missing'] }, description: 'Each credential\'s token.' },
    redis: { type: 'string', enum: ['ok', 'readonly', 'down', 'not configured'] },
    degraded: { type: 'array', items: { type: 'string' }, description: 'What works less well than it should: `redis`, `redis-readonly`, `platformToken:<credential>`, `platform:<credential>` (its latest 3 platform calls on this replica got no answer or a 5xx, the latest within 5 minutes, none answered since), `teams-reload` (its files do not validate: it runs older teams and admin tokens).' },
  },
})
