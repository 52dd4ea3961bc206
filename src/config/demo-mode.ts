import type { Env } from './sources.js'
import { getPath } from './sources.js'

// Demo mode runs the bundled sandbox in place of the platform. It must never start by
// accident in production: only with nothing configured at all, or on request.

/** What a setting is called for the operator, and where it lives in the merged config. */
const DEPLOYMENT_SETTINGS: { name: string; path: string[] }[] = [
  { name: 'PLATFORM_TOKEN', path: ['platform', 'token'] },
  { name: 'PLATFORM_TOKEN_FILE', path: ['platform', 'tokenFile'] },
  { name: 'PLATFORM_USERNAME', path: ['platform', 'username'] },
  { name: 'PLATFORM_PASSWORD', path: ['platform', 'password'] },
  { name: 'PLATFORM_CLIENT_ID', path: ['platform', 'clientId'] },
  { name: 'PLATFORM_CLIENT_SECRET', path: ['platform', 'clientSecret'] },
  { name: 'REDIS_URL', path: ['redis', 'url'] },
  { name: 'redis.sentinels', path: ['redis', 'sentinels'] },
  { name: 'redis.cluster', path: ['redis', 'cluster'] },
]

export type DemoDecision = { demo: true } | { demo: false; problem: string | null }

/**
 * Demo mode or not, from the merged raw settings: `DEMO=1` asks for it; without a
 * platform address it is demo mode only when nothing else a deployment sets is there,
 * else the start stops with a line naming the missing address and what was found.
 */
export function decideDemo(raw: Record<string, unknown>, env: Env): DemoDecision {
  const asked = env.DEMO
  if (asked === '1') return { demo: true }
  if (asked !== undefined && asked !== '' && asked !== '0') return { demo: false, problem: `DEMO: must be 1, or 0, empty or unset for no demo (got ${JSON.stringify(asked)})` }
  if (getPath(raw, ['platform', 'baseUrl']) != null) return { demo: false, problem: null }
  const found = DEPLOYMENT_SETTINGS.filter((s) => getPath(raw, s.path) != null).map((s) => s.name)
  if (Object.keys((getPath(raw, ['teams']) as object | undefined) ?? {}).length > 0) found.push('teams')
  if (Object.keys((getPath(raw, ['credentials']) as object | undefined) ?? {}).length > 0) found.push('credentials')
  if (env.CONFIG_FILE) found.push('CONFIG_FILE')
  if (env.TEAMS_FILE) found.push('TEAMS_FILE')
  if (found.length === 0) return { demo: true }
  return {
    demo: false,
    problem: `PLATFORM_BASE_URL: not set, but ${found.join(', ')} ${found.length === 1 ? 'is' : 'are'} configured; set PLATFORM_BASE_URL to the platform's address (or DEMO=1 for the bundled sandbox)`,
  }
}
