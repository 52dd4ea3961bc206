import { getPath } from './sources.js'

// Redis is shared, not trusted: every value and message the replicas leave there is
// sealed with GATEWAY_SECRET, and a replica believes only what carries the seal. Without
// the secret, anyone who may write to Redis (a neighbour on a shared instance, a leaked
// password) could plant answers every replica serves, or pause every replica. So Redis
// comes with a secret or not at all; demo mode never uses Redis.

/** The ways Redis is configured, as the operator names them. */
const REDIS_SETTINGS: { name: string; path: string[] }[] = [
  { name: 'REDIS_URL', path: ['redis', 'url'] },
  { name: 'redis.sentinels', path: ['redis', 'sentinels'] },
  { name: 'redis.cluster', path: ['redis', 'cluster'] },
]

/** The problem of a configuration with Redis and no GATEWAY_SECRET, or null. */
export function redisWithoutSecret(raw: Record<string, unknown>): string | null {
  const set = REDIS_SETTINGS.filter((s) => getPath(raw, s.path) != null).map((s) => s.name)
  if (set.length === 0 || getPath(raw, ['gatewaySecret']) != null) return null
  return (
    `GATEWAY_SECRET: required with Redis (${set.join(', ')}): it seals what the replicas share there; ` +
    'make one with `openssl rand -base64 32` and give every replica the same (GATEWAY_SECRET or GATEWAY_SECRET_FILE)'
  )
}
