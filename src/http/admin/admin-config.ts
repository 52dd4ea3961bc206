import type { FastifyInstance } from 'fastify'
import type { GatewayContext } from '../context.js'
import { NoReplicaError, RedisUnavailableError } from '../../errors.js'
import { LOG_LEVELS, type LogLevel, type LogLevelName } from '../../observe/log-level.js'
import type { Replicas } from '../../observe/replicas.js'
import type { Setting } from '../../config.js'
import { fingerprint } from '../../observe/fingerprint.js'
import { adminSchema, answer } from './admin-schemas.js'

const SOURCES = ['default', 'file', 'environment', 'demo', 'runtime']

const configSchema = {
  type: 'object',
  required: ['at', 'settings'],
  properties: {
    at: { type: 'string', format: 'date-time' },
    settings: {
      type: 'array',
      description: 'Every setting in force but the teams (`GET /admin/keys`, `GET /admin/status`), by its path in the config file; then the secrets of the named credentials.',
      items: {
        type: 'object',
        required: ['setting', 'value', 'source', 'from'],
        properties: {
          setting: { type: 'string', description: 'Its path in the config file, e.g. `cache.ttl.recent`.' },
          value: { description: 'Its value as configured (a duration as written, `30s`); null for a secret, and for a setting left unset. A URL (`redis.url`, `platform.baseUrl`, `platform.tokenUrl`, a credential\'s `baseUrl` and `tokenUrl`, any other absolute URL) without its userinfo, query or fragment: each shown as `***` (`https://***@auth.example/oauth/token?***`).' },
          source: { type: 'string', enum: SOURCES, description: 'Where it came from: `default` (config/default.yaml), `file` (CONFIG_FILE), `environment`, `demo` (set by demo mode), `runtime` (changed by an admin call).' },
          from: { type: 'string', description: 'Exactly where: `config/default.yaml`, `CONFIG_FILE`, the variable (`PLATFORM_PASSWORD_FILE`), `demo mode…`, `PUT /admin/log-level by <operator>`.' },
          fingerprint: { type: 'string', description: 'A secret\'s fingerprint (12 hex digits of HMAC-SHA256 keyed by GATEWAY_SECRET over the secret\'s hex SHA-256, as the token view and logs give it: the same on replicas sharing GATEWAY_SECRET, new at each start without it); never the secret.' },
        },
      },
    },
  },
} as const

const configDescription = 'Each setting\'s value and its source: default, CONFIG_FILE or environment (and demo mode, or a change at run time). Secrets only as fingerprints.'
const configSummary = 'The configuration in force on this replica, and where each setting came from'
const configRoute = adminSchema({ tag: 'state', operationId: 'getConfig', summary: configSummary, description: configDescription, response: { 200: answer(configSchema, 'The settings in force.') } })

const logLevelBody = {
  type: 'object',
  required: ['level'],
  additionalProperties: false,
  properties: {
    level: { type: 'string', enum: [...LOG_LEVELS], description: `one of ${LOG_LEVELS.join(', ')}` },
    replica: { type: 'string', minLength: 1, maxLength: 128, description: 'a replica id of GET /admin/cluster (default: every replica)' },
  },
} as const

const applied = 'Whether this replica changed its level (false: another replica was named). The others change theirs as the bus message reaches them; GET /admin/cluster shows each one\'s `logLevel`.'
const logLevelSchema = {
  type: 'object',
  required: ['level', 'previous', 'replicas', 'applied'],
  properties: {
    level: { type: 'string', enum: [...LOG_LEVELS] },
    previous: { type: 'string', description: 'The level this replica had before.' },
    replicas: { type: 'string', description: '`all`, or the replica named; without Redis, `this replica only`.' },
    applied: { type: 'boolean', description: applied },
  },
} as const

const logLevelRoute = adminSchema({
  tag: 'state',
  operationId: 'putLogLevel',
  summary: 'Change the log level at run time, on every replica or one',
  description: 'Until the replica restarts (then LOG_LEVEL again). Sent to the other replicas through Redis, sealed like every bus message; each replica audits its change.',
  body: logLevelBody,
  response: { 200: answer(logLevelSchema, 'The level set, and where.') },
  errors: {
    GW_BAD_REQUEST: 'The body is not `{"level": "…"}` with a level the log takes, and optionally `replica`.',
    GW_NOT_FOUND: '`replica` names no live replica.',
    GW_REDIS_UNAVAILABLE: 'The other replicas are reached through Redis, which is not configured or could not take the change; this replica changed its level when it was among those asked.',
  },
})

/**
 * The configuration in force (GET /admin/config) and the log level changed at run time
 * (PUT /admin/log-level). Registered inside adminRoutes, behind its token check. The
 * log level comes as `runtimeLevel`: Fastify reads a plugin's `logLevel` option as the
 * level of the plugin's own logger.
 */
export async function adminConfigRoutes(
  app: FastifyInstance,
  { config, runtimeLevel, bus, clock, replicas }: Pick<GatewayContext, 'config' | 'bus' | 'clock'> & { runtimeLevel: LogLevel; replicas: Replicas },
): Promise<void> {
  app.get('/admin/config', { schema: configRoute }, async () => {
    const changed = runtimeLevel.changed
    const settings = config.settings.map((s): Setting | (Omit<Setting, 'secret'> & { fingerprint?: string }) => {
      if (s.setting === 'logLevel' && changed) return { setting: s.setting, value: runtimeLevel.level, source: 'runtime', from: `PUT /admin/log-level by ${changed.by ?? 'an operator'} at ${new Date(changed.at).toISOString()}` }
      if (!s.secret) return s
      // A secret leaves the gateway as its fingerprint only, as the token view and the logs name it.
      const { secret: _secret, value, ...rest } = s
      return value == null ? { ...rest, value: null } : { ...rest, value: null, fingerprint: fingerprint(String(value), config.gatewaySecret) }
    })
    return { at: new Date(clock.now()).toISOString(), settings }
  })

  app.put('/admin/log-level', { schema: logLevelRoute }, async (request) => {
    const { level, replica } = request.body as { level: LogLevelName; replica?: string }
    const self = replica === undefined || replica === replicas.id
    if (!self) {
      const live = await replicas.cluster({ history: false })
      if (live.redis !== 'ok') throw new RedisUnavailableError(`replica ${replica} is reached through Redis (${live.redis}); nothing was changed`)
      if (!live.replicas.some((r) => r.id === replica && r.gone === null)) throw new NoReplicaError(replica)
    }
    let previous: string
    try {
      previous = await runtimeLevel.change(level, replica ?? null, request.adminActor)
    } catch (err) {
      // The change may still reach the others: a message Redis took late is delivered once it answers.
      throw new RedisUnavailableError("this replica's level was changed; the other replicas may not have been told: set it again once Redis answers", { cause: err })
    }
    const reached = replica ?? (bus ? 'all' : 'this replica only')
    return { level, previous, replicas: reached, applied: self }
  })
}
