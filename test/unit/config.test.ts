import { describe, expect, it } from 'vitest'
import { ConfigError, asWritten, type Config } from '../../src/config.js'
import { hashApiKey } from '../../src/access/api-keys.js'
import { loadConfigFrom } from '../helpers/load-config.js'

// Contract, "Configuration": env > CONFIG_FILE > config/default.yaml, secrets only from
// the environment or *_FILE paths, and invalid configuration stops the start with a
// message that names the key, without ever repeating a secret.

const CONFIG_PATH = '/virtual/config.yaml'
const BASE = 'https://platform.example.com'
const TOKEN = 'platform-token-abcdef123456'
const HASH = hashApiKey('rgw_config_test_key')

/** loadConfig with an inline CONFIG_FILE and inline *_FILE secrets; default.yaml from disk. */
function load(env: Record<string, string>, yaml?: string, files: Record<string, string> = {}): Config {
  if (yaml === undefined) return loadConfigFrom(env, files)
  return loadConfigFrom({ CONFIG_FILE: CONFIG_PATH, ...env }, { ...files, [CONFIG_PATH]: yaml })
}

/** The ConfigError a load throws; fails the test when it does not throw one. */
function problem(env: Record<string, string>, yaml?: string, files: Record<string, string> = {}): ConfigError {
  try {
    load(env, yaml, files)
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return err as ConfigError
  }
  throw new Error('expected a ConfigError, but the configuration loaded')
}

describe('defaults (config/default.yaml)', () => {
  it('lowers the learned limit\'s default start and floor to a ceiling below them', () => {
    const { platform } = load({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }, 'platform: { maxConcurrent: 1 }')
    expect([platform.maxConcurrent, platform.initialConcurrent, platform.minConcurrent]).toEqual([1, 1, 1])
  })

  it('runs in demo mode with the contract defaults when nothing is set', () => {
    const config = load({})
    expect(config.demo).toBe(true)
    // Demo mode keeps the proxy on loopback; HOST or a config file may open it.
    expect(config.host).toBe('127.0.0.1')
    expect(config.port).toBe(8080)
    expect(config.admin).toEqual({ host: '127.0.0.1', port: 8081, hosts: [], token: null, viewerToken: null, tokensFile: null, maxConnections: 128, tokens: [] })
    expect(config.server.maxConnections).toBe(4096)
    expect(config.logLevel).toBe('info')
    expect(config.platform.baseUrl).toBeNull()
    expect(config.platform.tokenUrl).toBe('/oauth/token')
    expect(config.platform.grantType).toBe('platform_dsp')
    expect(config.platform.timeoutMs).toBe(30_000)
    expect(config.redis.url).toBeNull()
    expect(config.bodyLimit).toBe(1024 * 1024)
    expect(config.shutdownGraceMs).toBe(10_000)
    expect(config.shutdownDrainMs).toBe(5000)
    expect(config.cache.ttl).toEqual({ recentMs: 300_000, settledMs: 86_400_000 })
    expect(config.teams).toEqual([])
    expect(config.secrets).toEqual([])
  })

  it('leaves demo mode and takes a static token with PLATFORM_BASE_URL and PLATFORM_TOKEN', () => {
    const config = load({ PLATFORM_BASE_URL: `${BASE}/`, PLATFORM_TOKEN: TOKEN })
    expect(config.demo).toBe(false)
    expect(config.platform.baseUrl).toBe(BASE)
    expect(config.credentials.default).toEqual({ name: 'default', baseUrl: BASE, token: TOKEN, tokenFile: null, login: null })
    expect(config.secrets).toEqual([TOKEN])
  })
})

describe('precedence: env > CONFIG_FILE > default.yaml', () => {
  const yaml = `
port: 9000
logLevel: warn
admin: { port: 9001 }
platform: { timeout: 5s }
`
  const PLATFORM = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }
  it('takes CONFIG_FILE over default.yaml', () => {
    const config = load(PLATFORM, yaml)
    expect(config.host).toBe('0.0.0.0')
    expect(config.port).toBe(9000)
    expect(config.logLevel).toBe('warn')
    expect(config.admin.port).toBe(9001)
    // Keys the file does not name keep their defaults (a deep merge).
    expect(config.admin.host).toBe('127.0.0.1')
    expect(config.platform.timeoutMs).toBe(5000)
    expect(config.platform.tokenUrl).toBe('/oauth/token')
  })

  it('starts each load from config/default.yaml as written: what one CONFIG_FILE set is not the next load\'s default', () => {
    expect(load(PLATFORM, yaml).platform.timeoutMs).toBe(5000)
    const next = load(PLATFORM, 'logLevel: info\n')
    expect(next.port).toBe(8080)
    expect(next.admin.port).toBe(8081)
    expect(next.platform.timeoutMs).toBe(30_000)
  })

  it('takes the environment over CONFIG_FILE', () => {
    const config = load({ ...PLATFORM, PORT: '9100', LOG_LEVEL: 'debug', ADMIN_PORT: '9101', HOST: '127.0.0.1' }, yaml)
    expect(config.port).toBe(9100)
    expect(config.logLevel).toBe('debug')
    expect(config.admin.port).toBe(9101)
    expect(config.host).toBe('127.0.0.1')
    expect(config.platform.timeoutMs).toBe(5000)
  })

  it('reads teams from CONFIG_FILE', () => {
    const config = load(
      PLATFORM,
      `
teams:
  growth:
    keys: ["${HASH}"]
    advertisers: [101, 102]
    rateLimit: { max: 600, window: 1m }
  ops:
    keys: []
    advertisers: ["*"]
    write: true
    refresh: true
    weight: 3
`,
    )
    expect(config.teams).toEqual([
      { name: 'growth', keys: [{ hash: HASH, id: HASH.slice(7, 19), lineage: HASH.slice(7, 19), replaces: null, successor: null, graceUntil: null, expiresAt: null, createdAt: null }], advertisers: new Set([101, 102]), write: false, refresh: false, credential: 'default', rateLimit: { max: 600, windowMs: 60_000 }, weight: 1, maxConcurrent: null, queue: null, platformSecondsPerDay: null, webhook: null },
      { name: 'ops', keys: [], advertisers: null, write: true, refresh: true, credential: 'default', rateLimit: null, weight: 3, maxConcurrent: null, queue: null, platformSecondsPerDay: null, webhook: null },
    ])
  })

  it('has the governor\'s defaults: a limit learned from 8 between 2 and 64 calls in flight, 200 queued, 10 s of wait', () => {
    const config = load({})
    const p = config.platform
    expect([p.adaptive, p.initialConcurrent, p.minConcurrent, p.maxConcurrent, p.maxConcurrentPerReplica, p.queue, p.queueTimeoutMs]).toEqual([true, 8, 2, 64, null, 200, 10_000])
  })

  it('reads key entries with an id and an expiry (a date is midnight UTC; a date-time without zone is UTC)', () => {
    const other = hashApiKey('rgw_config_test_key_2')
    const config = load(
      { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN },
      `
teams:
  growth:
    keys:
      - { hash: "${HASH}", id: growth-2026, createdAt: 2026-01-01T09:15:00Z, expiresAt: 2027-01-01 }
      - { hash: "${other}", expiresAt: "2026-12-01T12:30:00" }
    advertisers: ["*"]
`,
    )
    expect(config.teams[0]?.keys).toEqual([
      { hash: HASH, id: 'growth-2026', lineage: 'growth-2026', replaces: null, successor: null, graceUntil: null, createdAt: Date.parse('2026-01-01T09:15:00Z'), expiresAt: Date.parse('2027-01-01T00:00:00Z') },
      { hash: other, id: other.slice(7, 19), lineage: other.slice(7, 19), replaces: null, successor: null, graceUntil: null, createdAt: null, expiresAt: Date.parse('2026-12-01T12:30:00Z') },
    ])
  })

  it('reads a rotated key: the old entry names its successor and its grace, the successor its lineage and the key it replaces', () => {
    const next = hashApiKey('rgw_config_test_key_next')
    const config = load(
      { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN },
      `
teams:
  growth:
    keys:
      - { hash: "${HASH}", id: growth-1, successor: growth-2, graceUntil: 2026-03-08T12:00:00Z }
      - { hash: "${next}", id: growth-2, lineage: growth-1, replaces: growth-1, createdAt: 2026-03-01T12:00:00Z }
    advertisers: ["*"]
`,
    )
    expect(config.teams[0]?.keys).toEqual([
      { hash: HASH, id: 'growth-1', lineage: 'growth-1', replaces: null, successor: 'growth-2', graceUntil: Date.parse('2026-03-08T12:00:00Z'), createdAt: null, expiresAt: null },
      { hash: next, id: 'growth-2', lineage: 'growth-1', replaces: 'growth-1', successor: null, graceUntil: null, createdAt: Date.parse('2026-03-01T12:00:00Z'), expiresAt: null },
    ])
  })

  it.each([
    ['a grace without a successor', `{ hash: "${HASH}", id: growth-1, graceUntil: 2027-01-01 }`, /teams\.growth\.keys\.0\.graceUntil: only a key with a successor has a grace/],
    ['itself as its successor', `{ hash: "${HASH}", id: growth-1, successor: growth-1 }`, /teams\.growth\.keys\.0\.successor: growth-1 is this key itself/],
    ['an impossible grace', `{ hash: "${HASH}", successor: growth-2, graceUntil: 2027-02-30 }`, /teams\.growth\.keys\.0\.graceUntil: not a valid date/],
    ['a successor that is no key id', `{ hash: "${HASH}", successor: "a b" }`, /teams\.growth\.keys\.0\.successor: must be a key id/],
    ['an impossible date', `{ hash: "${HASH}", expiresAt: 2027-02-30 }`, /teams\.growth\.keys\.0\.expiresAt: not a valid date/],
    ['a date that is no date', `{ hash: "${HASH}", expiresAt: soon }`, /teams\.growth\.keys\.0\.expiresAt: must be a date/],
    ['a bad key id', `{ hash: "${HASH}", id: "a b" }`, /teams\.growth\.keys\.0\.id: must be a key id/],
    ["an unknown key field", `{ hash: "${HASH}", owner: me }`, /teams\.growth\.keys\.0: must be sha256:<hex> of an API key .*, or {hash/],
  ])('refuses a key entry with %s', (_name, entry, message) => {
    expect(problem({}, `teams:\n  growth:\n    keys: [${entry}]\n    advertisers: ["*"]\n`).message).toMatch(message)
  })

  it('refuses one key id used for two keys', () => {
    const yaml = `teams:\n  a: { keys: [{ hash: "${HASH}", id: k1 }], advertisers: ["*"] }\n  b: { keys: [{ hash: "${hashApiKey('x-other')}", id: k1 }], advertisers: ["*"] }\n`
    expect(problem({}, yaml).message).toMatch(/teams\.b\.keys\.0\.id: k1 is also the id of a key of team a/)
  })

  it('refuses a team whose name holds other characters than a name may have, saying which it may have', () => {
    for (const name of ['<b>x</b>', 'a b', 'équipe']) {
      const yaml = `teams:\n  ${JSON.stringify(name)}:\n    keys: ["${HASH}"]\n    advertisers: ["*"]\n`
      expect(problem({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }, yaml).problems).toEqual([`teams: ${JSON.stringify(name)} is not a valid team name (letters, digits, _ . - only, 64 at most, not . or ..)`])
      const files = { '/virtual/teams.yaml': yaml }
      expect(problem({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, TEAMS_FILE: '/virtual/teams.yaml' }, undefined, files).problems).toEqual([`teams: ${JSON.stringify(name)} is not a valid team name (letters, digits, _ . - only, 64 at most, not . or ..)`])
    }
  })

  it('refuses a credential whose name is not one a credential may have, before reading its settings', () => {
    for (const name of ['Partner', 'partner.eu', '1partner', 'a b']) {
      const yaml = `credentials:\n  ${JSON.stringify(name)}:\n    tokenFile: 7\n`
      expect(problem({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }, yaml).problems).toEqual([
        `credentials: ${JSON.stringify(name)} is not a valid credential name (lower-case letters, digits, _ - only, starting with a letter, 64 at most)`,
      ])
    }
  })

  it('reads named admin tokens from ADMIN_TOKENS_FILE next to ADMIN_TOKEN ("admin"), naming a bad line by its number only', () => {
    const alice = hashApiKey('alice-admin-token-000000000')
    const files = { '/run/admins': `# operators\nalice:${alice}\n\n` }
    const config = load({ ADMIN_TOKEN: 'the-admin-token-0123456789', ADMIN_TOKENS_FILE: '/run/admins' }, undefined, files)
    expect(config.admin.tokens).toEqual([
      { name: 'admin', hash: hashApiKey('the-admin-token-0123456789'), role: 'operator' },
      { name: 'alice', hash: alice, role: 'operator' },
    ])
    const err = problem({ ADMIN_TOKENS_FILE: '/run/admins' }, undefined, { '/run/admins': 'bob:plaintext-token-here\n' })
    expect(err.message).toMatch(/ADMIN_TOKENS_FILE: line 1 is not name:sha256/)
    expect(err.message).not.toContain('plaintext-token-here')
  })

  it('refuses one admin token given twice, in the file or beside ADMIN_TOKEN and ADMIN_VIEWER_TOKEN: its holder\'s role and name would be those of whichever came first', () => {
    const shared = hashApiKey('shared-admin-token-000000000')
    // A viewer's line after an operator's of the same token: its holder would purge, audited as alice.
    const twice = problem({ ADMIN_TOKENS_FILE: '/run/admins' }, undefined, { '/run/admins': `alice:${shared}\nbob:${shared}:viewer\n` })
    expect(twice.problems).toEqual(['ADMIN_TOKENS_FILE: line 2: the token of bob is also the token of alice; each holder needs a token of its own (the value is not shown)'])
    const admin = problem({ ADMIN_TOKEN: 'shared-admin-token-000000000', ADMIN_TOKENS_FILE: '/run/admins' }, undefined, { '/run/admins': `intern:${shared}:viewer\n` })
    expect(admin.problems).toEqual(['ADMIN_TOKENS_FILE: line 1: the token of intern is also the token of admin; each holder needs a token of its own (the value is not shown)'])
    const viewer = problem({ ADMIN_VIEWER_TOKEN: 'shared-admin-token-000000000', ADMIN_TOKENS_FILE: '/run/admins' }, undefined, { '/run/admins': `ops:${shared}\n` })
    expect(viewer.problems).toEqual(['ADMIN_TOKENS_FILE: line 1: the token of ops is also the token of viewer; each holder needs a token of its own (the value is not shown)'])
    for (const err of [twice, admin, viewer]) expect(err.message).not.toContain(shared.slice(7, 20))
  })

  it('takes PLATFORM_TOKEN_URL, PLATFORM_GRANT_TYPE and REDIS_URL from the environment', () => {
    const config = load({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, PLATFORM_TOKEN_URL: '/api/v1/auth/token', PLATFORM_GRANT_TYPE: 'other_grant', REDIS_URL: 'rediss://cache:6380/2', GATEWAY_SECRET: 'config-test-gateway-secret-0000' })
    expect(config.platform.tokenUrl).toBe('/api/v1/auth/token')
    expect(config.platform.grantType).toBe('other_grant')
    expect(config.redis.url).toBe('rediss://cache:6380/2')
  })
})

describe('Redis comes with GATEWAY_SECRET or not at all', () => {
  const HOW = 'make one with `openssl rand -base64 32` and give every replica the same (GATEWAY_SECRET or GATEWAY_SECRET_FILE)'
  it.each<{ name: string; env: Record<string, string>; yaml?: string; named: string }>([
    { name: 'REDIS_URL', env: { REDIS_URL: 'redis://cache:6379' }, named: 'REDIS_URL' },
    { name: 'Sentinel', env: {}, yaml: 'redis:\n  sentinels: [{ host: s1, port: 26379 }]\n', named: 'redis.sentinels' },
    { name: 'Cluster', env: {}, yaml: 'redis:\n  cluster: [{ host: c1, port: 7000 }]\n', named: 'redis.cluster' },
  ])('$name without GATEWAY_SECRET is refused, saying how to make one', ({ env, yaml, named }) => {
    expect(problem({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, ...env }, yaml).problems).toEqual([
      `GATEWAY_SECRET: required with Redis (${named}): it seals what the replicas share there; ${HOW}`,
    ])
  })

  it('takes Redis with a secret from GATEWAY_SECRET or GATEWAY_SECRET_FILE', () => {
    expect(load({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, REDIS_URL: 'redis://cache:6379', GATEWAY_SECRET: 'config-test-gateway-secret-0000' }).redis.url).toBe('redis://cache:6379')
    const fromFile = load({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, REDIS_URL: 'redis://cache:6379', GATEWAY_SECRET_FILE: '/run/secrets/g' }, undefined, { '/run/secrets/g': 'config-test-gateway-secret-0000\n' })
    expect(fromFile.gatewaySecret).toBe('config-test-gateway-secret-0000')
  })

  it('asks nothing of demo mode, which never uses Redis', () => {
    expect(load({ DEMO: '1', REDIS_URL: 'redis://cache:6379' }).demo).toBe(true)
  })

  it('asks no token of a platform DEMO=1 sets aside, which the sandbox\'s login replaces', () => {
    expect(load({ DEMO: '1', PLATFORM_BASE_URL: BASE }).demo).toBe(true)
    expect(() => load({ PLATFORM_BASE_URL: BASE })).toThrow(/PLATFORM_TOKEN: credential default has no token source/)
  })
})

describe("REDIS_URL's database (/<db>)", () => {
  const secret = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, GATEWAY_SECRET: 'config-test-gateway-secret-0000' }
  const cluster = 'redis:\n  cluster: [{ host: 10.0.0.7, port: 6379 }]\n'

  it('is taken by one server and behind a Sentinel, and /0 by a Cluster', () => {
    expect(load({ ...secret, REDIS_URL: 'redis://cache:6379/2' }).redis.url).toBe('redis://cache:6379/2')
    expect(load({ ...secret, REDIS_URL: 'redis://:pw-0123456789@ignored:6379/2' }, 'redis:\n  sentinels: [{ host: s1, port: 26379 }]\n').redis.sentinels).toHaveLength(1)
    expect(load({ ...secret, REDIS_URL: 'redis://:pw-0123456789@ignored:6379/0' }, cluster).redis.cluster).toHaveLength(1)
  })

  it('other than 0 is refused on a Cluster, which has database 0 alone, never showing the URL', () => {
    const err = problem({ ...secret, REDIS_URL: 'redis://:pw-0123456789@ignored:6379/2' }, cluster)
    expect(err.problems).toEqual(['REDIS_URL (redis.url): names database 2, but a Redis Cluster has database 0 alone: remove /2 from the URL, or give this installation its own redis.keyPrefix'])
    expect(err.message).not.toContain('pw-0123456789')
  })
})

describe("REDIS_URL's user and password", () => {
  const secret = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, GATEWAY_SECRET: 'config-test-gateway-secret-0000' }

  it('are a secret of the gateway\'s, as Redis gets the password (its escapes decoded)', () => {
    expect(load({ ...secret, REDIS_URL: 'redis://ops:p%40ss-word-0123@cache:6379' }).secrets).toContain('p@ss-word-0123')
    expect(load({ ...secret, REDIS_URL: 'rediss://:plain-password-0123@cache:6380/2' }).secrets).toContain('plain-password-0123')
  })

  it('holding a % that escapes nothing is refused at start, never showing the URL', () => {
    for (const url of ['redis://:pw%zz-secret-0123@cache:6379', 'redis://us%er:pw-secret-0123@cache:6379']) {
      const err = problem({ ...secret, REDIS_URL: url })
      expect(err.problems).toEqual(['REDIS_URL (redis.url): its user or password holds a % that is not followed by two hex digits: write % as %25; the value is not shown, as it may hold a password'])
      expect(err.message).not.toContain('secret-0123')
    }
  })
})

describe("redis.keyPrefix's braces on a Cluster", () => {
  const secret = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, GATEWAY_SECRET: 'config-test-gateway-secret-0000' }
  const cluster = 'redis:\n  cluster: [{ host: 10.0.0.7, port: 6379 }]\n'

  it("are refused: Redis hashes a key by its first {…}, which the prefix's would be in place of the gateway's hash tags", () => {
    for (const prefix of ['app{x}:', 'app{}:', 'app{']) {
      expect(problem(secret, `${cluster}  keyPrefix: "${prefix}"\n`).problems).toEqual([
        `redis.keyPrefix: holds "{", but a Redis Cluster hashes a key by its first {…}: the prefix's would stand in place of the gateway's hash tags, which put the keys one script writes together in one slot and spread the rest over the masters; remove the braces (got ${JSON.stringify(prefix)})`,
      ])
    }
  })

  it('are taken by one server, which has no slots, and "}" alone by a Cluster', () => {
    expect(load({ ...secret, REDIS_URL: 'redis://cache:6379' }, 'redis:\n  keyPrefix: "app{x}:"\n').redis.keyPrefix).toBe('app{x}:')
    expect(load(secret, `${cluster}  keyPrefix: "app}:"\n`).redis.keyPrefix).toBe('app}:')
  })
})

describe('redis.tlsServername: the name every Redis node\'s certificate is checked against', () => {
  const secret = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, GATEWAY_SECRET: 'config-test-gateway-secret-0000' }
  const cluster = 'redis:\n  cluster: [{ host: 10.0.0.7, port: 6379 }]\n'
  const NOT_TLS = 'redis.tlsServername: set, but Redis is not reached over TLS: set REDIS_URL (redis.url) to a rediss:// URL, or remove redis.tlsServername'

  it('is null unless set, and taken with rediss:// on a Cluster, a Sentinel or one server', () => {
    expect(load(secret).redis.tlsServername).toBeNull()
    const withTls = { ...secret, REDIS_URL: 'rediss://:pw-0123456789@redis.redis.svc:6379' }
    expect(load(withTls, `${cluster}  tlsServername: redis.redis.svc.cluster.local\n`).redis.tlsServername).toBe('redis.redis.svc.cluster.local')
    expect(load(withTls, 'redis:\n  sentinels: [{ host: s1, port: 26379 }]\n  tlsServername: redis-master.redis.svc\n').redis.tlsServername).toBe('redis-master.redis.svc')
    expect(load(withTls, 'redis:\n  tlsServername: Redis.Example\n').redis.tlsServername).toBe('Redis.Example')
    expect(load({ ...secret, REDIS_URL: 'rediss://cache:6380' }, 'redis:\n  tlsServername: localhost\n').redis.tlsServername).toBe('localhost')
  })

  it.each<{ name: string; env: Record<string, string>; yaml: string }>([
    { name: 'a redis:// REDIS_URL', env: { REDIS_URL: 'redis://:pw-0123456789@cache:6379' }, yaml: 'redis:\n  tlsServername: redis.test\n' },
    { name: 'a redis:// redis.url', env: {}, yaml: 'redis:\n  url: redis://cache:6379\n  tlsServername: redis.test\n' },
    { name: 'a Cluster without a URL', env: {}, yaml: `${cluster}  tlsServername: redis.test\n` },
    { name: 'no Redis at all', env: {}, yaml: 'redis:\n  tlsServername: redis.test\n' },
  ])('is refused with $name, the one line naming the key and never the URL', ({ env, yaml }) => {
    const err = problem({ ...secret, ...env }, yaml)
    expect(err.problems).toEqual([NOT_TLS])
    // The message names the line of the config file that writes the setting.
    const line = yaml.split('\n').findIndex((l) => l.includes('tlsServername')) + 1
    expect(err.message).toBe(`invalid configuration: ${NOT_TLS}; line ${line} of CONFIG_FILE (${CONFIG_PATH})`)
    expect(err.message).not.toContain('pw-0123456789')
  })

  it.each(['127.0.0.1', '10.0.0.7', '::1', '[::1]', '*.redis.svc', 'redis.svc.', 'redis..svc', '-redis.svc', 'redis-.svc', 'redis svc', 'redis.svc:6379', 'rediss://redis.svc', 'redis.123', `${'a'.repeat(64)}.svc`, `${'abcdefgh.'.repeat(28)}svc`])(
    'refuses %j, which is no host name, naming the key and what it must be',
    (name) => {
      const err = problem({ ...secret, REDIS_URL: 'rediss://cache:6380' }, `redis:\n  tlsServername: ${JSON.stringify(name)}\n`)
      expect(err.problems).toEqual([`redis.tlsServername: not a host name (got ${JSON.stringify(name)}): the DNS name every Redis node's certificate holds, e.g. redis.redis.svc.cluster.local`])
    },
  )

  it('refuses an empty value by the schema', () => {
    expect(problem({ ...secret, REDIS_URL: 'rediss://cache:6380' }, 'redis:\n  tlsServername: ""\n').problems.join('\n')).toMatch(/^redis\.tlsServername: /m)
  })
})

describe('GATEWAY_SECRET_FALLBACK: the other secret of a change of GATEWAY_SECRET', () => {
  const base = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, REDIS_URL: 'redis://cache:6379' }
  const SECRET = 'config-test-gateway-secret-0000'
  const FALLBACK = 'config-test-fallback-secret-000'

  it('is null unless set; read from the variable or its file, and scrubbed from the log as a secret', () => {
    expect(load({ ...base, GATEWAY_SECRET: SECRET }).gatewaySecretFallback).toBeNull()
    expect(load({ ...base, GATEWAY_SECRET: SECRET, GATEWAY_SECRET_FALLBACK: FALLBACK }).gatewaySecretFallback).toBe(FALLBACK)
    const fromFile = load({ ...base, GATEWAY_SECRET: SECRET, GATEWAY_SECRET_FALLBACK_FILE: '/run/secrets/f' }, undefined, { '/run/secrets/f': `${FALLBACK}\n` })
    expect(fromFile.gatewaySecretFallback).toBe(FALLBACK)
    expect(fromFile.secrets).toContain(FALLBACK)
  })

  it.each<{ name: string; env: Record<string, string>; line: RegExp }>([
    { name: 'without GATEWAY_SECRET', env: { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, GATEWAY_SECRET_FALLBACK: FALLBACK }, line: /^GATEWAY_SECRET_FALLBACK: set without GATEWAY_SECRET: / },
    { name: 'the same as GATEWAY_SECRET', env: { ...base, GATEWAY_SECRET: SECRET, GATEWAY_SECRET_FALLBACK: SECRET }, line: /^GATEWAY_SECRET_FALLBACK: the same as GATEWAY_SECRET: / },
    { name: 'shorter than 16 characters', env: { ...base, GATEWAY_SECRET: SECRET, GATEWAY_SECRET_FALLBACK: 'short-secret' }, line: /gatewaySecretFallback|GATEWAY_SECRET_FALLBACK/ },
  ])('is refused $name, naming it and never a secret', ({ env, line }) => {
    const err = problem(env)
    expect(err.problems.some((p) => line.test(p)), err.message).toBe(true)
    expect(err.message).not.toContain(SECRET)
    expect(err.message).not.toContain(FALLBACK)
    expect(err.message).not.toContain('short-secret')
  })

  it('is refused in the config file', () => {
    const err = problem({ ...base, GATEWAY_SECRET: SECRET }, `gatewaySecretFallback: ${FALLBACK}\n`)
    expect(err.problems).toContain('gatewaySecretFallback: secrets may not be set in CONFIG_FILE; use its environment variable or *_FILE')
    expect(err.message).not.toContain(FALLBACK)
  })
})

describe('The Sentinels\' own TLS (redis.sentinelTls) and password (REDIS_SENTINEL_PASSWORD)', () => {
  const secret = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, GATEWAY_SECRET: 'config-test-gateway-secret-0000' }
  const sentinels = 'redis:\n  sentinels: [{ host: sentinel-0.redis, port: 26379 }]\n'
  const withTls = { ...secret, REDIS_URL: 'rediss://:pw-0123456789@redis.redis.svc:6379' }
  const PASSWORD = 'sentinel-password-0123456789'

  it('are off unless set; taken with Sentinels, the password from the variable or its file', () => {
    expect(load(withTls, sentinels).redis).toMatchObject({ sentinelTls: false, sentinelPassword: null })
    expect(load({ ...withTls, REDIS_SENTINEL_PASSWORD: PASSWORD }, `${sentinels}  sentinelTls: true\n`).redis).toMatchObject({ sentinelTls: true, sentinelPassword: PASSWORD })
    const fromFile = load({ ...secret, REDIS_URL: 'redis://:pw-0123456789@x:6379', REDIS_SENTINEL_PASSWORD_FILE: '/run/secrets/s' }, sentinels, { '/run/secrets/s': `${PASSWORD}\n` })
    expect(fromFile.redis).toMatchObject({ sentinelTls: false, sentinelPassword: PASSWORD })
    expect(fromFile.secrets).toContain(PASSWORD)
  })

  it.each<{ name: string; env: Record<string, string>; yaml: string; line: string }>([
    { name: 'sentinelTls without Sentinels', env: withTls, yaml: 'redis:\n  sentinelTls: true\n', line: 'redis.sentinelTls: set, but no Sentinels are: set redis.sentinels (with redis.sentinelName), or remove redis.sentinelTls' },
    { name: 'sentinelTls without rediss://', env: { ...secret, REDIS_URL: 'redis://:pw-0123456789@x:6379' }, yaml: `${sentinels}  sentinelTls: true\n`, line: 'redis.sentinelTls: set, but Redis is not reached over TLS: set REDIS_URL (redis.url) to a rediss:// URL, or remove redis.sentinelTls' },
    { name: 'a Sentinel password without Sentinels', env: { ...withTls, REDIS_SENTINEL_PASSWORD: PASSWORD }, yaml: 'redis:\n  cluster: [{ host: redis-0, port: 6379 }]\n', line: 'REDIS_SENTINEL_PASSWORD: set, but no Sentinels are: set redis.sentinels (with redis.sentinelName), or remove REDIS_SENTINEL_PASSWORD' },
  ])('refuse $name, in one line naming the key and never a password', ({ env, yaml, line }) => {
    const err = problem(env, yaml)
    expect(err.problems).toEqual([line])
    expect(err.message).not.toContain('pw-0123456789')
    expect(err.message).not.toContain(PASSWORD)
  })

  it('refuse a Sentinel password in the config file, without repeating it', () => {
    const err = problem(withTls, `${sentinels}  sentinelPassword: ${PASSWORD}\n`)
    expect(err.problems).toContain('redis.sentinelPassword: secrets may not be set in CONFIG_FILE; use its environment variable or *_FILE')
    expect(err.message).not.toContain(PASSWORD)
  })
})

describe('TEAMS_FILE: the teams in a file of their own', () => {
  const TEAMS_PATH = '/virtual/teams.yaml'
  const PLATFORM = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }
  const TEAMS = `teams:\n  growth:\n    keys: ["${HASH}"]\n    advertisers: [101, 102]\n    rateLimit: { max: 600, window: 1m }\n`
  const withTeams = (env: Record<string, string>, teams: string, files: Record<string, string> = {}) => ({ env: { ...env, TEAMS_FILE: TEAMS_PATH }, files: { ...files, [TEAMS_PATH]: teams } })

  it('reads the teams of TEAMS_FILE, with the schema of CONFIG_FILE\'s teams, with or without a CONFIG_FILE', () => {
    const alone = withTeams(PLATFORM, TEAMS)
    const fromTeamsFile = loadConfigFrom(alone.env, alone.files)
    expect(fromTeamsFile.teams).toEqual(load(PLATFORM, TEAMS).teams)
    expect(fromTeamsFile.teams.map((t) => t.name)).toEqual(['growth'])
    // The settings stay in CONFIG_FILE, which then declares no teams.
    const both = withTeams({ ...PLATFORM, CONFIG_FILE: CONFIG_PATH }, TEAMS, { [CONFIG_PATH]: 'port: 9000\nteamsReload: { poll: 250ms }\n' })
    const config = loadConfigFrom(both.env, both.files)
    expect(config.port).toBe(9000)
    expect(config.teamsReload.pollMs).toBe(250)
    expect(config.teams).toEqual(fromTeamsFile.teams)
  })

  it('takes `teams: {}` as no team', () => {
    const none = withTeams(PLATFORM, 'teams: {}\n')
    expect(loadConfigFrom(none.env, none.files).teams).toEqual([])
  })

  it('refuses teams declared in both CONFIG_FILE and TEAMS_FILE, naming both', () => {
    for (const configTeams of [TEAMS, 'teams: {}\n']) {
      const both = withTeams({ ...PLATFORM, CONFIG_FILE: CONFIG_PATH }, TEAMS, { [CONFIG_PATH]: configTeams })
      expect(problem(both.env, undefined, both.files).problems).toEqual([
        `TEAMS_FILE: teams are declared both in CONFIG_FILE (${CONFIG_PATH}) and in TEAMS_FILE (${TEAMS_PATH}); keep them in TEAMS_FILE alone (remove teams: from CONFIG_FILE)`,
      ])
    }
  })

  it.each([
    ['an empty file (a file caught half-written must not drop every key)', '', `TEAMS_FILE (${TEAMS_PATH}): holds no teams: mapping; write teams: {} for no team`],
    ['teams: with nothing under it', 'teams:\n', `TEAMS_FILE (${TEAMS_PATH}): holds no teams: mapping; write teams: {} for no team`],
    ['another setting', `${TEAMS}cache:\n  ttl: { recent: 1m }\n`, `TEAMS_FILE (${TEAMS_PATH}): cache: not a teams setting; only teams: belongs in TEAMS_FILE (set cache in CONFIG_FILE)`],
    ['a list', '- growth\n', `TEAMS_FILE (${TEAMS_PATH}): must be a YAML mapping`],
    ['its teams without the teams: line above them (a first file written by hand)', 'growth:\n  keys: []\n  advertisers: [101]\n', `TEAMS_FILE (${TEAMS_PATH}): growth: a team (keys, advertisers) outside teams:; write a teams: line first and indent growth: under it`],
  ])('refuses a TEAMS_FILE with %s', (_what, text, message) => {
    const files = withTeams(PLATFORM, text)
    expect(problem(files.env, undefined, files.files).problems).toEqual([message])
  })

  it('names TEAMS_FILE when it cannot be read', () => {
    expect(problem({ ...PLATFORM, TEAMS_FILE: '/run/teams/none.yaml' }).problems).toEqual(['TEAMS_FILE (/run/teams/none.yaml): cannot be read (ENOENT)'])
  })

  it('names the key of a bad team, never a pasted plaintext key', () => {
    const plaintext = 'rgw_plaintext_key_in_the_teams_file_000000'
    const files = withTeams(PLATFORM, `teams:\n  growth: { keys: ["${plaintext}"], advertisers: [101] }\n`)
    const err = problem(files.env, undefined, files.files)
    expect(err.message).toMatch(/teams\.growth\.keys\.0: must be sha256:<hex>/)
    expect(err.message).not.toContain(plaintext)
  })
})

describe('secrets from *_FILE', () => {
  const files = {
    '/run/secrets/admin': 'admin-token-from-file-0123456789\n',
    '/run/secrets/gateway': '  gateway-secret-from-file-0123456789  \n',
    '/run/secrets/user': 'reporting@example.com\n',
    '/run/secrets/password': 'password-from-file-xyz\n',
    '/run/secrets/client-id': '7\n',
    '/run/secrets/client-secret': 'client-secret-from-file-xyz\n',
  }

  it('reads ADMIN_TOKEN_FILE and GATEWAY_SECRET_FILE, trimmed', () => {
    const config = load({ ADMIN_TOKEN_FILE: '/run/secrets/admin', GATEWAY_SECRET_FILE: '/run/secrets/gateway' }, undefined, files)
    expect(config.admin.token).toBe('admin-token-from-file-0123456789')
    expect(config.gatewaySecret).toBe('gateway-secret-from-file-0123456789')
    expect(config.secrets).toEqual(['admin-token-from-file-0123456789', 'gateway-secret-from-file-0123456789'])
  })

  it('reads every part of the password login from *_FILE', () => {
    const config = load(
      {
        PLATFORM_BASE_URL: BASE,
        PLATFORM_USERNAME_FILE: '/run/secrets/user',
        PLATFORM_PASSWORD_FILE: '/run/secrets/password',
        PLATFORM_CLIENT_ID_FILE: '/run/secrets/client-id',
        PLATFORM_CLIENT_SECRET_FILE: '/run/secrets/client-secret',
      },
      undefined,
      files,
    )
    expect(config.credentials.default?.login).toEqual({
      username: 'reporting@example.com',
      password: 'password-from-file-xyz',
      clientId: 7,
      clientSecret: 'client-secret-from-file-xyz',
      tokenUrl: '/oauth/token',
      grantType: 'platform_dsp',
    })
    expect(config.secrets).toEqual(expect.arrayContaining(['password-from-file-xyz', 'client-secret-from-file-xyz']))
  })

  it('keeps PLATFORM_TOKEN_FILE as a path (the file is watched, not read once)', () => {
    const config = load({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN_FILE: '/run/secrets/platform-token' }, undefined, { '/run/secrets/platform-token': 'first-token-000000\n' })
    expect(config.credentials.default?.tokenFile).toBe('/run/secrets/platform-token')
    expect(config.credentials.default?.token).toBeNull()
  })

  it('refuses a platform token no authorization header carries as it is: `Bearer <token>`, a space or a character outside printable ASCII, never repeating it', () => {
    const bearer = problem({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: `Bearer ${TOKEN}` })
    expect(bearer.problems).toEqual(['PLATFORM_TOKEN: starts with "Bearer ", as an authorization header does; it must hold the token alone (the content is not shown)'])
    const file = problem({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN_FILE: '/run/secrets/platform-token' }, undefined, { '/run/secrets/platform-token': `bearer ${TOKEN}\n` })
    expect(file.problems).toEqual(['PLATFORM_TOKEN_FILE: /run/secrets/platform-token starts with "Bearer ", as an authorization header does; it must hold the token alone (the content is not shown)'])
    const quote = problem({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN_FILE: '/run/secrets/platform-token' }, undefined, { '/run/secrets/platform-token': `${TOKEN}\u2019\n` })
    expect(quote.problems).toEqual(['PLATFORM_TOKEN_FILE: /run/secrets/platform-token holds a space or a character outside printable ASCII, which no authorization header carries; it must hold the token alone (the content is not shown)'])
    const space = problem({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: `${TOKEN.slice(0, 8)} ${TOKEN.slice(8)}` })
    expect(space.problems).toEqual(['PLATFORM_TOKEN: holds a space or a character outside printable ASCII, which no authorization header carries; it must hold the token alone (the content is not shown)'])
    const named = problem({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, CREDENTIAL_PARTNER_TOKEN: `Bearer ${TOKEN}` }, 'credentials:\n  partner: {}\n')
    expect(named.problems).toEqual(['CREDENTIAL_PARTNER_TOKEN: starts with "Bearer ", as an authorization header does; it must hold the token alone (the content is not shown)'])
    for (const err of [bearer, file, quote, space, named]) expect(err.message).not.toContain(TOKEN.slice(8))
    // Opaque tokens of printable ASCII stay tokens, JSON and a word `Bearer` inside included.
    expect(load({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: '{"access_token":"abc.def"}' }).credentials.default?.token).toBe('{"access_token":"abc.def"}')
    expect(load({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: 'Bearer_abc.def-ghi' }).credentials.default?.token).toBe('Bearer_abc.def-ghi')
  })

  // As PLATFORM_TOKEN in quotes is refused (docker --env-file keeps them): in a file (echo '"…"' > token, a value copied from JSON or YAML) it was sent as it was, refused 401 on every call.
  it('refuses a platform token file holding the token wrapped in quotes, never repeating it', () => {
    for (const content of [`"${TOKEN}"\n`, `'${TOKEN}'`]) {
      const err = problem({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN_FILE: '/run/secrets/platform-token' }, undefined, { '/run/secrets/platform-token': content })
      expect(err.problems).toEqual(['PLATFORM_TOKEN_FILE: /run/secrets/platform-token is wrapped in quotes, which no token has; it must hold the token alone, without them (the content is not shown)'])
      expect(err.message).not.toContain(TOKEN.slice(8))
    }
    expect(load({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN_FILE: '/t' }, undefined, { '/t': `"${TOKEN}` }).credentials.default?.tokenFile).toBe('/t')
  })

  it('names the *_FILE variable of a file that cannot be read or is empty', () => {
    expect(problem({ ADMIN_TOKEN_FILE: '/run/secrets/missing' }).message).toMatch(/ADMIN_TOKEN_FILE: \/run\/secrets\/missing cannot be read \(ENOENT\)/)
    expect(problem({ ADMIN_TOKEN_FILE: '/run/secrets/empty' }, undefined, { '/run/secrets/empty': '\n' }).message).toMatch(/ADMIN_TOKEN_FILE: \/run\/secrets\/empty is empty/)
  })

  it('refuses a secret set both directly and as *_FILE', () => {
    const err = problem({ ADMIN_TOKEN: 'admin-token-direct-0123456789', ADMIN_TOKEN_FILE: '/run/secrets/admin' }, undefined, files)
    expect(err.message).toMatch(/ADMIN_TOKEN: set both ADMIN_TOKEN and ADMIN_TOKEN_FILE/)
    expect(err.message).not.toContain('admin-token-direct-0123456789')
    expect(err.message).not.toContain('admin-token-from-file-0123456789')
  })
})

describe('invalid configuration names the key', () => {
  const cases: { name: string; env: Record<string, string>; yaml?: string; files?: Record<string, string>; expected: RegExp }[] = [
    { name: 'PORT=abc', env: { PORT: 'abc' }, expected: /PORT: must be an integer from 0 to 65535 \(got "abc"\)/ },
    { name: 'PORT=70000', env: { PORT: '70000' }, expected: /PORT: must be an integer from 0 to 65535/ },
    { name: 'ADMIN_PORT=-1', env: { ADMIN_PORT: '-1' }, expected: /ADMIN_PORT: must be an integer/ },
    { name: 'LOG_LEVEL=loud', env: { LOG_LEVEL: 'loud' }, expected: /LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent \(got "loud"\)/ },
    // Never repeated: a malformed Redis URL cannot be masked.
    { name: 'REDIS_URL=http://x', env: { REDIS_URL: 'http://x' }, expected: /REDIS_URL: must be a redis:\/\/ or rediss:\/\/ URL$/ },
    { name: 'PLATFORM_BASE_URL=ftp://x', env: { PLATFORM_BASE_URL: 'ftp://x', PLATFORM_TOKEN: TOKEN }, expected: /PLATFORM_BASE_URL: must be an http:\/\/ or https:\/\/ URL/ },
    { name: 'PLATFORM_BASE_URL with a path', env: { PLATFORM_BASE_URL: `${BASE}/api/v1`, PLATFORM_TOKEN: TOKEN }, expected: /PLATFORM_BASE_URL \(platform.baseUrl\): must be an origin only, without path, query or fragment \(got "https:\/\/platform\.example\.com\/api\/v1"\); write https:\/\/platform\.example\.com: the callers' \/api\/v1\/… paths are sent under it$/ },
    { name: 'PLATFORM_BASE_URL with a user and password', env: { PLATFORM_BASE_URL: 'https://ops:pw-in-url-123@platform.example', PLATFORM_TOKEN: TOKEN }, expected: /PLATFORM_BASE_URL \(platform.baseUrl\): must be an origin only, without a user or password/ },
    { name: 'a credential baseUrl with a user', env: { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, CREDENTIAL_PARTNER_TOKEN: TOKEN }, yaml: 'credentials:\n  partner: { baseUrl: "https://ops@partner.example" }', expected: /credentials\.partner\.baseUrl: must be an origin only, without a user or password/ },
    { name: 'a bad duration', env: {}, yaml: 'platform: { timeout: 5 minutes }', expected: /platform\.timeout: must be milliseconds as a number, or a string such as 500ms/ },
    { name: 'a bad rate-limit window', env: {}, yaml: `teams:\n  growth: { keys: [], advertisers: [101], rateLimit: { max: 5, window: 1 week } }`, expected: /teams\.growth\.rateLimit\.window: must be milliseconds/ },
    // Each started, then failed what it was for: a stack trace and exit 1 (Fastify's own check); every platform call 502 (undici's `invalid keepAliveTimeout`); every call 503 GW_OVERLOADED, the queue full; every report 502, larger than the whole budget.
    { name: 'a body limit of 0', env: {}, yaml: 'bodyLimit: 0B', expected: /bodyLimit: must be at least 1B: the largest request body a caller may send \(got 0B\)/ },
    { name: 'a platform keep-alive of 0', env: {}, yaml: 'platform: { keepAliveTimeout: 0s }', expected: /platform\.keepAliveTimeout: must be at least 1ms: how long an idle connection to the platform is kept for the next call \(got 0s\)/ },
    { name: 'a platform queue of 0', env: {}, yaml: 'platform: { queue: 0 }', expected: /platform\.queue: must be a whole number, at least 1: the platform calls waiting for a seat per replica; every call takes a place in it, if only for a moment \(got 0\)/ },
    { name: "a team's queue of 0", env: {}, yaml: 'teams:\n  growth: { keys: [], advertisers: [101], queue: 0 }', expected: /teams\.growth\.queue: must be a whole number, at least 1: a ceiling on the team's platform calls waiting for a seat/ },
    { name: 'an answer budget of 0', env: {}, yaml: 'platform: { bufferTotalBytes: 0 }', expected: /platform\.bufferTotalBytes: must be at least 64KiB: the answers and request bodies under way are held in it, and an answer larger than all of it is 502 GW_UPSTREAM \(got 0\)/ },
    // Each was cut down to the ceiling without a word: the start and the floor set were not the ones in force.
    { name: 'an initial limit past the ceiling', env: {}, yaml: 'platform: { maxConcurrent: 16, initialConcurrent: 32 }', expected: /platform\.initialConcurrent: must be at most platform\.maxConcurrent \(16; got 32\)/ },
    { name: 'a floor past the ceiling', env: {}, yaml: 'platform: { maxConcurrent: 4, minConcurrent: 6 }', expected: /platform\.minConcurrent: must be at most platform\.maxConcurrent \(4; got 6\)/ },
    // Node reads a deadline of 0 as none: a typo'd 0s ran a listener whose callers could hold a request or an idle connection open for ever.
    { name: 'a request deadline of 0', env: {}, yaml: 'server: { requestTimeout: 0s }', expected: /server\.requestTimeout: must be at least 100ms: the whole request, headers and body, is cut off past it; Node reads 0 as no deadline at all \(got 0s\)/ },
    { name: 'a head deadline of 0', env: {}, yaml: 'server: { headersTimeout: 0s }', expected: /server\.headersTimeout: must be at least 100ms: the request line and headers are cut off past it; Node reads 0 as no deadline at all \(got 0s\)/ },
    { name: 'a caller keep-alive of 0', env: {}, yaml: 'server: { keepAliveTimeout: 0 }', expected: /server\.keepAliveTimeout: must be at least 100ms: an idle kept-alive caller connection is closed past it; Node reads 0 as no deadline at all \(got 0\)/ },
    { name: 'a bad size', env: {}, yaml: 'bodyLimit: 1MB', expected: /bodyLimit: must be bytes as a number, or a string such as 64MiB/ },
    { name: 'an unknown setting', env: {}, yaml: 'cache: { ttl: { recent: 5m, stale: 1h } }', expected: /cache\.ttl\.stale: unknown setting/ },
    { name: 'an unknown top-level setting', env: {}, yaml: 'listen: 8080', expected: /listen: unknown setting/ },
    { name: 'a removed setting (platform.isolation)', env: {}, yaml: 'platform: { isolation: true }', expected: /platform\.isolation: unknown setting/ },
    { name: 'an unknown team setting', env: {}, yaml: 'teams:\n  growth: { keys: [], advertisers: [101], admin: true }', expected: /teams\.growth\.admin: unknown setting/ },
    { name: 'a team key that is not sha256:<64 hex>', env: {}, yaml: 'teams:\n  growth: { keys: ["sha256:abc"], advertisers: [101] }', expected: /teams\.growth\.keys\.0: must be sha256:<hex> of an API key \(64 lower-case hex digits/ },
    { name: 'an upper-case hex team key', env: {}, yaml: `teams:\n  growth: { keys: ["${HASH.toUpperCase().replace('SHA256', 'sha256')}"], advertisers: [101] }`, expected: /teams\.growth\.keys\.0: must be sha256:<hex> of an API key \(64 lower-case hex digits/ },
    { name: 'a key listed for two teams', env: {}, yaml: `teams:\n  a: { keys: ["${HASH}"], advertisers: [101] }\n  b: { keys: ["${HASH}"], advertisers: [102] }`, expected: /teams\.b\.keys: a key is also listed for team a/ },
    { name: 'an advertiser that is not a positive integer', env: {}, yaml: 'teams:\n  growth: { keys: [], advertisers: [0] }', expected: /teams\.growth\.advertisers\.0: / },
    { name: 'a team refresh that is not a boolean', env: {}, yaml: 'teams:\n  growth: { keys: [], advertisers: [101], refresh: "yes" }', expected: /teams\.growth\.refresh: must be true or false \(true: the team may force a fresh copy/ },
    { name: 'a team without advertisers', env: {}, yaml: 'teams:\n  growth: { keys: [] }', expected: /teams\.growth\.advertisers: required/ },
    { name: 'a team naming an unknown credential', env: {}, yaml: 'teams:\n  growth: { keys: [], advertisers: [101], credential: partner }', expected: /teams\.growth\.credential: no credential named partner/ },
    { name: 'PLATFORM_BASE_URL without any token source', env: { PLATFORM_BASE_URL: BASE }, expected: /PLATFORM_TOKEN: credential default has no token source; set PLATFORM_TOKEN, PLATFORM_TOKEN_FILE, or PLATFORM_USERNAME/ },
    { name: 'PLATFORM_TOKEN together with PLATFORM_TOKEN_FILE', env: { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, PLATFORM_TOKEN_FILE: '/run/secrets/t' }, expected: /PLATFORM_TOKEN: credential default has more than one token source/ },
    { name: 'PLATFORM_TOKEN together with a password login', env: { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, PLATFORM_USERNAME: 'u@example.com', PLATFORM_PASSWORD: 'pw-secret-123', PLATFORM_CLIENT_ID: '2', PLATFORM_CLIENT_SECRET: 'cs-secret-123' }, expected: /PLATFORM_TOKEN: credential default has more than one token source \(PLATFORM_TOKEN and the password login\)/ },
    // The line names the sources that were set: PLATFORM_TOKEN, which was not, sent the reader looking for it.
    { name: 'PLATFORM_TOKEN_FILE together with a password login', env: { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN_FILE: '/run/secrets/t', PLATFORM_USERNAME: 'u@example.com', PLATFORM_PASSWORD: 'pw-secret-123', PLATFORM_CLIENT_ID: '2', PLATFORM_CLIENT_SECRET: 'cs-secret-123' }, expected: /PLATFORM_TOKEN_FILE: credential default has more than one token source \(PLATFORM_TOKEN_FILE and the password login\); set one of PLATFORM_TOKEN, PLATFORM_TOKEN_FILE or the password login/ },
    { name: 'an incomplete password login', env: { PLATFORM_BASE_URL: BASE, PLATFORM_USERNAME: 'u@example.com', PLATFORM_PASSWORD: 'pw-secret-123' }, expected: /PLATFORM_USERNAME: the password login of credential default also needs PLATFORM_CLIENT_ID, PLATFORM_CLIENT_SECRET/ },
    // undici sends no user or password of a URL (the token request carries the login in its body): they were dropped in silence, and stood in CONFIG_FILE.
    { name: 'a token URL with a user and password', env: { PLATFORM_BASE_URL: BASE, PLATFORM_USERNAME: 'u@example.com', PLATFORM_PASSWORD: 'pw-secret-123', PLATFORM_CLIENT_ID: '2', PLATFORM_CLIENT_SECRET: 'cs-secret-123', PLATFORM_TOKEN_URL: 'https://ops:tu-secret-123@auth.example.com/oauth/token' }, expected: /PLATFORM_TOKEN_URL: must hold no user or password \(the value is not shown\)/ },
    { name: 'a credential token URL with a user, in CONFIG_FILE', env: { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, CREDENTIAL_PARTNER_TOKEN: TOKEN }, yaml: 'credentials:\n  partner: { tokenUrl: "https://ops:tu-secret-123@auth.example.com/oauth/token" }', expected: /CREDENTIAL_PARTNER_TOKEN_URL: must hold no user or password \(the value is not shown\)/ },
    // Sent as it is in the token request, each was refused by the platform (400 unsupported_grant_type) at every login, the start going on.
    { name: 'a grant type with a space at its end (a .env line)', env: { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, PLATFORM_GRANT_TYPE: 'platform_dsp ' }, expected: /PLATFORM_GRANT_TYPE: "platform_dsp " is not a grant type \(letters, digits, - \. _, or an absolute URI such as urn:ietf:params:oauth:grant-type:jwt-bearer\): it has spaces at its ends; remove them$/ },
    { name: 'a blank grant type', env: { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, PLATFORM_GRANT_TYPE: ' ' }, expected: /PLATFORM_GRANT_TYPE: " " is not a grant type .*: it has spaces at its ends; remove them$/ },
    { name: 'a grant type with a space inside', env: { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, PLATFORM_GRANT_TYPE: 'platform dsp' }, expected: /PLATFORM_GRANT_TYPE: "platform dsp" is not a grant type \(letters, digits, - \. _, or an absolute URI such as urn:ietf:params:oauth:grant-type:jwt-bearer\)$/ },
    { name: 'a credential grant type with a space at its end, in CONFIG_FILE', env: { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, CREDENTIAL_PARTNER_TOKEN: TOKEN }, yaml: 'credentials:\n  partner: { grantType: "password " }', expected: /CREDENTIAL_PARTNER_GRANT_TYPE: "password " is not a grant type/ },
    { name: 'a token URL that is neither a path nor a URL', env: { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, PLATFORM_TOKEN_URL: 'oauth/token' }, expected: /PLATFORM_TOKEN_URL: must be a path starting with \// },
    // A URL resolves `//oauth/token` (a doubled slash) against the platform's address as the host oauth: the login's password and client secret went there.
    { name: 'a token path that names another host (//)', env: { PLATFORM_BASE_URL: BASE, PLATFORM_USERNAME: 'u@example.com', PLATFORM_PASSWORD: 'pw-secret-123', PLATFORM_CLIENT_ID: '2', PLATFORM_CLIENT_SECRET: 'cs-secret-123', PLATFORM_TOKEN_URL: '//oauth/token' }, expected: /PLATFORM_TOKEN_URL: "\/\/oauth\/token" names the host oauth \(a path starts with one \/\), not a path of the platform's address; write the path with one \/, or the whole https:\/\/ URL/ },
    { name: 'a token path of slashes alone', env: { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, PLATFORM_TOKEN_URL: '//' }, expected: /PLATFORM_TOKEN_URL: "\/\/" names a host \(a path starts with one \/\)/ },
    { name: 'a token path that names another host (/\\)', env: { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, PLATFORM_TOKEN_URL: '/\\evil.example/token' }, expected: /PLATFORM_TOKEN_URL: .* names the host evil\.example \(a path starts with one \/\)/ },
    // Listened on as written, [::1] was a host name: getaddrinfo ENOTFOUND at the listen.
    { name: 'an IPv6 HOST in brackets, as a URL writes it', env: { HOST: '[::1]' }, expected: /HOST \(host\): \[::1\] is an IPv6 address in brackets, as a URL writes it; write it without them \(::1\)/ },
    { name: 'an IPv6 ADMIN_HOST in brackets', env: { ADMIN_HOST: '[::]' }, expected: /ADMIN_HOST \(admin\.host\): \[::\] is an IPv6 address in brackets/ },
    // Listened on as written, each was a host name no resolver knows: exit 1, `cannot listen on 127.0.0.1 :8080: getaddrinfo ENOTFOUND 127.0.0.1 `.
    { name: 'a HOST with a space at its end (a .env line)', env: { HOST: '127.0.0.1 ' }, expected: /^invalid configuration: HOST \(host\): "127\.0\.0\.1 " is not an address to listen on \(an IP address, IPv6 without brackets, or a host name\): it has spaces at its ends; remove them$/ },
    { name: 'a HOST written as a URL', env: { HOST: 'http://0.0.0.0' }, expected: /HOST \(host\): "http:\/\/0\.0\.0\.0" is not an address to listen on \(an IP address, IPv6 without brackets, or a host name\): write the host alone, without a scheme or path$/ },
    { name: 'a HOST with a port', env: { HOST: '0.0.0.0:8080' }, expected: /HOST \(host\): "0\.0\.0\.0:8080" is not an address to listen on \(an IP address, IPv6 without brackets, or a host name\): write the port in PORT \(port\)$/ },
    { name: 'an admin.host with a port, in CONFIG_FILE', env: { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }, yaml: 'admin: { host: "localhost:9" }', expected: /ADMIN_HOST \(admin\.host\): "localhost:9" is not an address to listen on \(an IP address, IPv6 without brackets, or a host name\): write the port in ADMIN_PORT \(admin\.port\)$/ },
    { name: 'a blank HOST', env: { HOST: ' ' }, expected: /HOST \(host\): " " is not an address to listen on \(an IP address, IPv6 without brackets, or a host name\): it has spaces at its ends; remove them$/ },
    { name: 'a short ADMIN_TOKEN', env: { ADMIN_TOKEN: 'short-admin' }, expected: /ADMIN_TOKEN: / },
    // A variable of no declared credential is read by nothing: the operator believes a token is set.
    { name: 'a credential variable of a mistyped credential name', env: { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, CREDENTIAL_PARTNR_TOKEN: TOKEN }, yaml: 'credentials:\n  partner: {}\n', expected: /CREDENTIAL_PARTNR_TOKEN: a variable of no declared credential \(credentials: partner\): the gateway reads nothing of it; did you mean CREDENTIAL_PARTNER_TOKEN\? Remove it, or declare the credential it is for$/ },
    { name: 'a credential variable left after its credential was removed', env: { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, CREDENTIAL_OLD_PARTNER_TOKEN_FILE: '/run/secrets/old' }, expected: /CREDENTIAL_OLD_PARTNER_TOKEN_FILE: a variable of no declared credential \(credentials: none declared\): the gateway reads nothing of it; remove it, or declare the credential it is for$/ },
    { name: 'a credential variable of a secret the gateway does not read', env: { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, CREDENTIAL_PARTNER_TOKEN: TOKEN, CREDENTIAL_PARTNER_TOKEN_URL: '/oauth/token' }, yaml: 'credentials:\n  partner: {}\n', expected: /CREDENTIAL_PARTNER_TOKEN_URL: a variable of no declared credential \(credentials: partner\): the gateway reads nothing of it; remove it/ },
    { name: 'CONFIG_FILE that does not exist', env: { CONFIG_FILE: '/etc/nowhere.yaml' }, expected: /CONFIG_FILE \(\/etc\/nowhere\.yaml\): cannot be read \(ENOENT\)/ },
    { name: 'CONFIG_FILE that is not a mapping', env: {}, yaml: '- a\n- b\n', expected: /CONFIG_FILE \(\/virtual\/config\.yaml\): must be a YAML mapping/ },
    { name: 'CONFIG_FILE that is not YAML', env: {}, yaml: 'port: [8080\n', expected: /CONFIG_FILE \(\/virtual\/config\.yaml\): not valid YAML/ },
  ]

  it.each(cases)('$name', ({ env, yaml, files, expected }) => {
    const err = problem(env, yaml, files)
    expect(err.message).toMatch(/^invalid configuration:( \S|\n {2}- )/)
    expect(err.message).toMatch(expected)
    expect(err.problems.length).toBeGreaterThan(0)
  })

  // The config file writes a credential's name in lower case; its variables write it in
  // capitals (a `-` as `_`): the name as the file writes it is the slip most made.
  it('names the variable meant when a credential variable writes the name as the config file does, in lower case or with its -', () => {
    const err = problem({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, CREDENTIAL_partner_eu_TOKEN: TOKEN, 'CREDENTIAL_PARTNER-EU_PASSWORD_FILE': '/run/secrets/pw' }, 'credentials:\n  partner-eu: {}\n')
    expect(err.problems.filter((p) => !p.startsWith('CREDENTIAL_PARTNER_EU_TOKEN:'))).toEqual([
      'CREDENTIAL_PARTNER-EU_PASSWORD_FILE: a variable of no declared credential (credentials: partner-eu): the gateway reads nothing of it; did you mean CREDENTIAL_PARTNER_EU_PASSWORD_FILE? Remove it, or declare the credential it is for',
      'CREDENTIAL_partner_eu_TOKEN: a variable of no declared credential (credentials: partner-eu): the gateway reads nothing of it; did you mean CREDENTIAL_PARTNER_EU_TOKEN? Remove it, or declare the credential it is for',
    ])
  })

  it('names each credential variable no credential reads, never its value; reads every variable of a declared credential, and leaves an empty one alone', () => {
    const secret = 'orphan-secret-value-0123456789'
    const err = problem({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, CREDENTIAL_PARTNR_TOKEN: secret, CREDENTIAL_PARTNR_PASSWORD_FILE: '/run/secrets/pw' }, 'credentials:\n  partner: {}\n')
    expect(err.problems).toEqual([
      'CREDENTIAL_PARTNER_TOKEN: credential partner has no token source; set CREDENTIAL_PARTNER_TOKEN, CREDENTIAL_PARTNER_TOKEN_FILE, or CREDENTIAL_PARTNER_USERNAME, CREDENTIAL_PARTNER_PASSWORD, CREDENTIAL_PARTNER_CLIENT_ID and CREDENTIAL_PARTNER_CLIENT_SECRET',
      'CREDENTIAL_PARTNR_PASSWORD_FILE: a variable of no declared credential (credentials: partner): the gateway reads nothing of it; did you mean CREDENTIAL_PARTNER_PASSWORD_FILE? Remove it, or declare the credential it is for',
      'CREDENTIAL_PARTNR_TOKEN: a variable of no declared credential (credentials: partner): the gateway reads nothing of it; did you mean CREDENTIAL_PARTNER_TOKEN? Remove it, or declare the credential it is for',
    ])
    expect(err.message).not.toContain(secret)
    const files = { '/s/u': 'user@example.com', '/s/p': 'pw-secret-123', '/s/i': '7', '/s/c': 'cs-secret-123' }
    const login = { CREDENTIAL_PARTNER_EU_USERNAME_FILE: '/s/u', CREDENTIAL_PARTNER_EU_PASSWORD_FILE: '/s/p', CREDENTIAL_PARTNER_EU_CLIENT_ID_FILE: '/s/i', CREDENTIAL_PARTNER_EU_CLIENT_SECRET_FILE: '/s/c' }
    const config = load({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, ...login, CREDENTIAL_AGENCY_TOKEN: TOKEN, CREDENTIAL_GONE_TOKEN: '' }, 'credentials:\n  partner-eu: {}\n  agency: {}\n', files)
    expect(config.credentials['partner-eu']?.login?.username).toBe('user@example.com')
    expect(config.credentials.agency?.token).toBe(TOKEN)
  })

  it('says where a file is not valid YAML and why, in one line ending with the reason, never its text (a teams file may hold a webhook secret)', () => {
    const platform = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }
    expect(problem(platform, 'teams:\n  all:\n    keys: [ "whsec_c2VjcmV0"\n    advertisers: [101]\n').problems).toEqual([
      'CONFIG_FILE (/virtual/config.yaml): not valid YAML at line 4, column 5: Flow sequence in block collection must be sufficiently indented and end with a ]',
    ])
    expect(problem(platform, 'teams:\n  all:\n\tkeys: []\n').problems).toEqual(['CONFIG_FILE (/virtual/config.yaml): not valid YAML at line 3, column 1: Tabs are not allowed as indentation'])
  })

  it('never repeats the password of a platform URL that holds one (it would be shown by GET /admin/config)', () => {
    const err = problem({ PLATFORM_BASE_URL: 'https://ops:pw-in-url-123@platform.example', PLATFORM_TOKEN: TOKEN })
    expect(err.message).not.toContain('pw-in-url-123')
  })

  it('names a refused token URL without its userinfo, query or fragment (a client secret or a password rides there)', () => {
    for (const url of ['oauth/token?client_secret=cs-in-url-123#pw-in-url-123', '//ops:pw-in-url-123@auth.example/token?client_secret=cs-in-url-123']) {
      const err = problem({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, PLATFORM_TOKEN_URL: url })
      expect(err.message).toMatch(/PLATFORM_TOKEN_URL: /)
      expect(err.message).not.toMatch(/cs-in-url-123|pw-in-url-123|ops:/)
    }
  })

  it('takes a grant type that is a name or an absolute URI (an extension grant)', () => {
    for (const grantType of ['password', 'platform_dsp', 'client.credentials-2', 'urn:ietf:params:oauth:grant-type:jwt-bearer', 'https://auth.example/grants/dsp']) {
      const login = { PLATFORM_USERNAME: 'u@example.com', PLATFORM_PASSWORD: 'pw-secret-123', PLATFORM_CLIENT_ID: '2', PLATFORM_CLIENT_SECRET: 'cs-secret-123' }
      expect(load({ PLATFORM_BASE_URL: BASE, ...login, PLATFORM_GRANT_TYPE: grantType }).credentials.default?.login?.grantType).toBe(grantType)
    }
  })

  it('reports every problem at once, one line each', () => {
    const err = problem({ PORT: 'abc', LOG_LEVEL: 'loud', REDIS_URL: 'http://x' })
    expect(err.problems).toHaveLength(3)
    expect(err.problems.map((p) => p.split(':')[0]).sort()).toEqual(['LOG_LEVEL', 'PORT', 'REDIS_URL'])
  })

  it('tells an OTEL_* value it cannot honour in the same start as a setting of the wrong type and a timer past 24 days', () => {
    const platform = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }
    const err = problem({ ...platform, LOG_LEVEL: 'verbose', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_BSP_SCHEDULE_DELAY: '2147483648' }, 'shutdownGrace: 30d\n')
    expect(err.problems.map((p) => p.split(':')[0]).sort()).toEqual(['LOG_LEVEL', 'OTEL_BSP_SCHEDULE_DELAY', 'OTEL_EXPORTER_OTLP_PROTOCOL', 'shutdownGrace'])
  })

  it('refuses a file poll (teamsReload.poll, platform.tokenFilePoll) under 100ms: 0s re-read the files in a busy loop, a third of a core on an idle replica', () => {
    const platform = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }
    expect(load(platform, 'teamsReload: { poll: 100ms }\nplatform: { tokenFilePoll: 100ms }').teamsReload.pollMs).toBe(100)
    expect(problem(platform, 'teamsReload: { poll: 0s }\nplatform: { tokenFilePoll: 0 }').problems.sort()).toEqual([
      'platform.tokenFilePoll: must be at least 100ms (got 0)',
      'teamsReload.poll: must be at least 100ms (got 0s)',
    ])
  })

  it('refuses a *_FILE form of a variable that has none (REDIS_URL_FILE, PLATFORM_BASE_URL_FILE), naming it and what to set: it was ignored, and REDIS_URL_FILE ran every replica without Redis', () => {
    const platform = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }
    const files = { '/run/secrets/redis-url': 'redis://:pw-1234567890@redis:6379/0\n' }
    expect(problem({ ...platform, REDIS_URL_FILE: '/run/secrets/redis-url' }, undefined, files).problems).toEqual([
      'REDIS_URL_FILE: not read: REDIS_URL has no *_FILE form; set REDIS_URL itself (a Kubernetes Secret gives it with env valueFrom.secretKeyRef)',
    ])
    expect(problem({ ...platform, PLATFORM_BASE_URL_FILE: '/x', LOG_LEVEL_FILE: '/y' }).problems.map((p) => p.split(':')[0]).sort()).toEqual(['LOG_LEVEL_FILE', 'PLATFORM_BASE_URL_FILE'])
    // The *_FILE variables of the contract stay what they are.
    expect(load({ ...platform, ADMIN_TOKEN_FILE: '/a' }, undefined, { '/a': 'admin-token-0123456789abcdef' }).admin.tokens).toHaveLength(1)
  })

  it('takes cache.lockTtl (1 s by default) and refuses one under 100ms', () => {
    expect(load({}).cache.lockTtlMs).toBe(1000)
    const platform = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }
    expect(load(platform, 'cache: { lockTtl: 250ms }').cache.lockTtlMs).toBe(250)
    expect(problem(platform, 'cache: { lockTtl: 50ms }').problems).toEqual(['cache.lockTtl: must be at least 100ms (got 50ms)'])
    // The setting it replaces is refused by name, not silently ignored.
    expect(problem(platform, 'cache: { lockTimeout: 10s }').problems).toEqual([expect.stringMatching(/^cache\.lockTimeout: /)])
  })

  it('takes cache.refreshMinAge (10 s by default), 0 included', () => {
    expect(load({}).cache.refreshMinAgeMs).toBe(10_000)
    const platform = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }
    expect(load(platform, 'cache: { refreshMinAge: 1m }').cache.refreshMinAgeMs).toBe(60_000)
    expect(load(platform, 'cache: { refreshMinAge: 0 }').cache.refreshMinAgeMs).toBe(0)
  })

  it('takes cache.refreshAhead as a switch, on by default; a number as before it was one: 0 off, a fraction on', () => {
    expect(load({}).cache.refreshAhead).toBe(true)
    const platform = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }
    expect(load(platform, 'cache: { refreshAhead: false }').cache.refreshAhead).toBe(false)
    expect(load(platform, 'cache: { refreshAhead: 0 }').cache.refreshAhead).toBe(false)
    expect(load(platform, 'cache: { refreshAhead: 0.8 }').cache.refreshAhead).toBe(true)
    expect(problem(platform, 'cache: { refreshAhead: 1.5 }').problems).toEqual([expect.stringMatching(/^cache\.refreshAhead: /)])
  })

  it('takes the answers\' budget (128MiB, 10 s by default) and refuses a readIdleTimeout under 100ms', () => {
    expect(load({}).platform).toMatchObject({ bufferTotalBytes: 128 * 1024 * 1024, readIdleTimeoutMs: 10_000 })
    const platform = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }
    expect(load(platform, 'platform: { bufferTotalBytes: 8MiB, readIdleTimeout: 2s }').platform).toMatchObject({ bufferTotalBytes: 8 * 1024 * 1024, readIdleTimeoutMs: 2000 })
    expect(problem(platform, 'platform: { readIdleTimeout: 0s }').problems).toEqual(['platform.readIdleTimeout: must be at least 100ms (got 0s)'])
  })

  it('takes a config that still sets the retired platform.bufferBytes, ignores it, and says so', () => {
    const platform = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }
    const config = load(platform, 'platform: { bufferBytes: 512KiB, bufferTotalBytes: 8MiB }')
    expect(config.platform).toMatchObject({ bufferTotalBytes: 8 * 1024 * 1024 })
    expect(config.platform).not.toHaveProperty('bufferBytes')
    expect(config.warnings).toEqual(['platform.bufferBytes no longer has an effect (every answer is received whole within platform.bufferTotalBytes, the one budget of the answers on their way to callers); remove it'])
    expect(config.settings.filter((s) => s.setting === 'platform.bufferBytes')).toEqual([])
  })

  it('reports a bad duration once, not once per union branch', () => {
    const err = problem({}, 'platform: { timeout: 5 minutes }')
    expect(err.problems.filter((p) => p.startsWith('platform.timeout'))).toHaveLength(1)
  })
})

describe('ownership.accountRoutes: each route once, as a call\'s path is matched', () => {
  const routes = (...lines: string[]) => `ownership:\n  accountRoutes:\n${lines.map((l) => `    - ${l}\n`).join('')}`
  const env = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }
  it('refuses a path listed twice: one field would hold, silently', () => {
    expect(problem(env, routes('{ path: /api/v1/campaign/get, field: userId }', '{ path: /api/v1/campaign/get, field: advertiserId }')).message).toContain('ownership.accountRoutes.1.path: /api/v1/campaign/get is listed twice (ownership.accountRoutes.0 too): list each route once, with the one field it reads')
  })
  it('refuses a path ending in /: a call\'s path is matched without its trailing slash, so it would match none', () => {
    expect(problem(env, routes('{ path: /api/v1/audience/get/, field: userId }')).message).toContain('ownership.accountRoutes.0.path: ends in /, and a call\'s path is matched without its trailing slash: write /api/v1/audience/get')
  })
  it('refuses a report read: it is placed by advertiserId (GET) or campaignIds (POST), and a field of its own would refuse a scoped team\'s reads', () => {
    expect(problem(env, routes('{ path: /api/v1/report/campaigns/get, field: userId }')).message).toContain('ownership.accountRoutes.0.path: /api/v1/report/campaigns/get is a report read, placed by advertiserId (GET) or campaignIds (POST): remove it')
  })
  it('takes the default list and a list of distinct paths', () => {
    expect(load(env).ownership.accountRoutes.map((r) => r.path)).toEqual(['/api/v1/campaign/get', '/api/v1/campaign/banner/create'])
    expect(load(env, routes('{ path: /api/v1/campaign/get, field: userId }', '{ path: /api/v1/audience/get, field: advertiserId }')).ownership.accountRoutes).toHaveLength(2)
  })
})

describe('ownership.creativeSets.check: pass, said at start', () => {
  const env = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }
  const team = (name: string, advertisers: string, write: boolean) => `  ${name}:\n    keys: ["${hashApiKey(`rgw_config_test_key_${name}`)}"]\n    advertisers: ${advertisers}\n    write: ${write}\n`
  const yaml = (check: string, ...teams: string[]) => `ownership:\n  creativeSets: { check: ${check} }\nteams:\n${teams.join('')}`
  const said = (config: Config) => config.warnings.filter((w) => w.includes('ownership.creativeSets'))

  it('warns once, naming the setting, what it allows and the scoped teams that may write, no secret in it', () => {
    const config = load(env, yaml('pass', team('growth', '[101]', true), team('brand', '[102, 103]', true), team('viewers', '[101]', false), team('ops', '["*"]', true)))
    expect(said(config)).toEqual([
      "ownership.creativeSets.check is pass: a team limited to some advertisers may attach any advertiser's creative sets (creativeSetIds are sent unchecked; scoped teams that may write: growth, brand); set check: lookup (with listPath) to check them, or refuse",
    ])
    expect(JSON.stringify(config.warnings)).not.toMatch(new RegExp([TOKEN, 'sha256:', 'rgw_'].join('|')))
  })

  it('says nothing with refuse or lookup, nor with pass when no scoped team may write', () => {
    expect(said(load(env, yaml('refuse', team('growth', '[101]', true))))).toEqual([])
    expect(said(load(env, `ownership:\n  creativeSets: { check: lookup, listPath: /api/v1/creative-set/get }\nteams:\n${team('growth', '[101]', true)}`))).toEqual([])
    expect(said(load(env, yaml('pass', team('viewers', '[101]', false), team('ops', '["*"]', true))))).toEqual([])
  })
})

describe('jobs.keep shorter than jobs.webhookRetryFor, said at start', () => {
  const env = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }
  const said = (config: Config) => config.warnings.filter((w) => w.includes('jobs.keep'))

  it('warns once, naming both settings and what a late push meets', () => {
    expect(said(load(env, 'jobs:\n  keep: 2m\n'))).toEqual([
      'jobs.keep (2m) is shorter than jobs.webhookRetryFor (1h): a push tried again past jobs.keep links to a result that answers 410 GW_JOB_EXPIRED; set jobs.keep to jobs.webhookRetryFor or more, or webhookRetryFor shorter',
    ])
  })

  it('says nothing with the defaults, nor with keep at webhookRetryFor or more', () => {
    expect(said(load(env))).toEqual([])
    expect(said(load(env, 'jobs:\n  keep: 30m\n  webhookRetryFor: 30m\n'))).toEqual([])
    expect(said(load(env, 'jobs:\n  keep: 2h\n'))).toEqual([])
  })
})

describe('a team\'s advertisers: ids, or "*" alone', () => {
  const platform = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }
  const team = (advertisers: string) => `teams:\n  growth:\n    keys: ["${HASH}"]\n    advertisers: ${advertisers}\n`

  it('refuses "*" beside advertiser ids (every advertiser, or some?), one line naming the team and the setting', () => {
    for (const [advertisers, ids] of [['["*", 101]', '101'], ['[101, "*", 102]', '101, 102']] as const) {
      expect(problem(platform, team(advertisers)).problems).toEqual([`teams.growth.advertisers: "*" (every advertiser) is listed beside advertiser ids (${ids}); give ["*"] alone, or the ids alone`])
    }
  })

  it('says what an advertiser may be, once, and the value given', () => {
    for (const [value, shown] of [['"all"', '"all"'], ['0', '0'], ['1.5', '1.5'], ['"101"', '"101"'], ['null', 'null']] as const) {
      expect(problem(platform, team(`[${value}]`)).problems).toEqual([`teams.growth.advertisers.0: must be an advertiser id (a whole number, at least 1), or "*" alone for every advertiser (got ${shown})`])
    }
  })

  it('takes ids, and "*" alone', () => {
    expect(load(platform, team('[101, 102]')).teams[0]?.advertisers).toEqual(new Set([101, 102]))
    expect(load(platform, team('["*"]')).teams[0]?.advertisers).toBeNull()
  })
})

describe('a renamed setting: the old name taken for one release, with a warning', () => {
  const platform = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }
  const warning = 'platform.permitLease is renamed platform.seatLease: the old name is taken until the next release; set platform.seatLease instead'

  it('refuses a platform.timeout under 100ms (every call would be 504, not sent for its deadline)', () => {
    expect(problem(platform, 'platform: { timeout: 0s }').problems).toEqual(['platform.timeout: must be at least 100ms: a platform call\'s whole budget, connecting and its answer received whole (got 0s)'])
    expect(load(platform, 'platform: { timeout: 100ms }').platform.timeoutMs).toBe(100)
  })

  it('takes platform.seatLease (5 s by default) and refuses one under 300ms; no warning', () => {
    expect(load({}).platform.seatLeaseMs).toBe(5000)
    const config = load(platform, 'platform: { seatLease: 2s }')
    expect([config.platform.seatLeaseMs, config.warnings]).toEqual([2000, []])
    expect(problem(platform, 'platform: { seatLease: 100ms }').problems).toEqual(['platform.seatLease: must be at least 300ms (got 100ms)'])
  })

  it('takes platform.permitLease as platform.seatLease, from CONFIG_FILE, and says so', () => {
    const config = load(platform, 'platform: { permitLease: 2s }')
    expect(config.platform.seatLeaseMs).toBe(2000)
    expect(config.warnings).toEqual([warning])
    // GET /admin/config: the setting in force under its new name, from the file; the old name is no setting.
    expect(config.settings.find((s) => s.setting === 'platform.seatLease')).toEqual({ setting: 'platform.seatLease', value: '2s', source: 'file', from: 'CONFIG_FILE' })
    expect(config.settings.filter((s) => s.setting === 'platform.permitLease')).toEqual([])
  })

  // A refusal named platform.seatLease, which the file does not write, and no line of it:
  // the operator searched the file for a name it does not hold.
  it('refuses a platform.permitLease under 300ms by the name and the line the file writes it', () => {
    const refused = problem(platform, 'platform:\n  timeout: 30s\n  permitLease: 100ms\n')
    expect(refused.problems).toEqual(['platform.permitLease: must be at least 300ms (got 100ms); it is renamed platform.seatLease'])
    expect(refused.located).toEqual([`platform.permitLease: must be at least 300ms (got 100ms); it is renamed platform.seatLease; line 3 of CONFIG_FILE (${CONFIG_PATH})`])
  })

  it('asWritten names a moved setting, or one under it, by its old name; any other problem stays', () => {
    const moved = [['platform.permitLease', 'platform.seatLease']] as const
    expect(asWritten('platform.seatLease: must be at least 300ms (got 100ms)', moved)).toBe('platform.permitLease: must be at least 300ms (got 100ms); it is renamed platform.seatLease')
    expect(asWritten('platform.seatLeaseMs: x', moved)).toBe('platform.seatLeaseMs: x')
    expect(asWritten('platform.seatLease: x', [])).toBe('platform.seatLease: x')
  })

  it('keeps platform.seatLease when both are set, and says the old one is ignored', () => {
    const config = load(platform, 'platform: { seatLease: 3s, permitLease: 1s }')
    expect(config.platform.seatLeaseMs).toBe(3000)
    expect(config.warnings).toEqual(['platform.permitLease is renamed platform.seatLease, which is set too: platform.permitLease is ignored; remove it'])
  })
})

describe('secrets never come from CONFIG_FILE and are never echoed', () => {
  const secretsInFile: [string, string][] = [
    ['admin.token', 'admin:\n  token: file-admin-token-0123456789'],
    ['gatewaySecret', 'gatewaySecret: file-gateway-secret-0123456789'],
    ['platform.token', 'platform:\n  token: file-platform-token-0123456789'],
    ['platform.password', 'platform:\n  password: file-platform-password-0123456789'],
    ['platform.clientSecret', 'platform:\n  clientSecret: file-client-secret-0123456789'],
  ]

  it.each(secretsInFile)('refuses %s in CONFIG_FILE', (key, yaml) => {
    const err = problem({}, yaml)
    expect(err.message).toContain(`${key}: secrets may not be set in CONFIG_FILE`)
    expect(err.message).not.toMatch(/file-[a-z-]+-0123456789/)
  })

  it('refuses a Redis URL with a user or password in CONFIG_FILE, without echoing it; REDIS_URL may hold one', () => {
    const secret = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, GATEWAY_SECRET: 'gateway-secret-0123456789abcdef0123' }
    for (const url of ['redis://:file-redis-password-0123456789@127.0.0.1:6379/0', 'rediss://gw:file-redis-password-0123456789@redis.example:6380', 'redis://file-redis-password-0123456789@127.0.0.1']) {
      const err = problem(secret, `redis:\n  url: ${url}`)
      expect(err.message).toContain('redis.url: holds a user or password; secrets may not be set in CONFIG_FILE')
      expect(err.message).not.toContain('file-redis-password')
    }
    expect(load(secret, 'redis:\n  url: redis://127.0.0.1:6379/0').redis.url).toBe('redis://127.0.0.1:6379/0')
    expect(load({ ...secret, REDIS_URL: 'redis://:env-password-0123456789@127.0.0.1:6379' }, 'redis:\n  url: redis://127.0.0.1:6379/0').redis.url).toContain('env-password')
  })

  it('refuses a secret in a named credential of CONFIG_FILE without echoing it', () => {
    const err = problem({}, 'credentials:\n  partner:\n    password: partner-password-0123456789')
    expect(err.message).toContain('credentials.partner.password: unknown setting')
    expect(err.message).not.toContain('partner-password-0123456789')
  })

  it('does not echo an invalid secret from the environment or a *_FILE', () => {
    const short = 'sh0rt-adm1n'
    expect(problem({ ADMIN_TOKEN: short }).message).not.toContain(short)
    expect(problem({ GATEWAY_SECRET: short }).message).not.toContain(short)
    expect(problem({ ADMIN_TOKEN_FILE: '/run/secrets/admin' }, undefined, { '/run/secrets/admin': short }).message).not.toContain(short)
  })

  it('does not echo the secrets of an incomplete or ambiguous login', () => {
    const env = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN, PLATFORM_USERNAME: 'u@example.com', PLATFORM_PASSWORD: 'pw-secret-123456', PLATFORM_CLIENT_ID: '2', PLATFORM_CLIENT_SECRET: 'cs-secret-123456' }
    const text = problem(env).message + problem({ PLATFORM_BASE_URL: BASE, PLATFORM_PASSWORD: 'pw-secret-123456' }).message
    for (const secret of [TOKEN, 'pw-secret-123456', 'cs-secret-123456']) expect(text).not.toContain(secret)
  })

  it('does not echo what was put in a team key list (it may be a plaintext key)', () => {
    const plaintext = 'rgw_plaintext_key_that_should_have_been_hashed'
    const err = problem({}, `teams:\n  growth: { keys: ["${plaintext}"], advertisers: [101] }`)
    expect(err.message).toMatch(/teams\.growth\.keys\.0: must be sha256:<hex>/)
    expect(err.message).not.toContain(plaintext)
  })
})

describe('demo mode only when nothing is configured, or with DEMO=1', () => {
  const ASK = "set PLATFORM_BASE_URL to the platform's address (or DEMO=1 for the bundled sandbox)"
  it.each<{ name: string; env: Record<string, string>; yaml?: string; found: string }>([
    { name: 'a token file', env: { PLATFORM_TOKEN_FILE: '/run/secrets/t' }, found: 'PLATFORM_TOKEN_FILE is' },
    { name: 'a static token', env: { PLATFORM_TOKEN: TOKEN }, found: 'PLATFORM_TOKEN is' },
    { name: 'a password login', env: { PLATFORM_USERNAME: 'u', PLATFORM_PASSWORD: 'p', PLATFORM_CLIENT_ID: '1', PLATFORM_CLIENT_SECRET: 's' }, found: 'PLATFORM_USERNAME, PLATFORM_PASSWORD, PLATFORM_CLIENT_ID, PLATFORM_CLIENT_SECRET are' },
    { name: 'Redis', env: { REDIS_URL: 'redis://cache:6379' }, found: 'REDIS_URL is' },
    { name: 'a config file with teams', env: {}, yaml: `teams:\n  growth:\n    keys: ["${HASH}"]\n    advertisers: [101]\n`, found: 'teams, CONFIG_FILE are' },
    { name: 'an empty config file', env: {}, yaml: '{}', found: 'CONFIG_FILE is' },
    { name: 'a teams file', env: { TEAMS_FILE: '/run/teams/teams.yaml' }, found: 'teams, TEAMS_FILE are' },
    { name: 'a teams file without teams', env: { TEAMS_FILE: '/run/teams/none.yaml' }, found: 'TEAMS_FILE is' },
  ])('$name without PLATFORM_BASE_URL stops the start', ({ env, yaml, found }) => {
    const err = problem(env, yaml, { '/run/secrets/t': 'a-token-000000', '/run/teams/teams.yaml': `teams:\n  growth:\n    keys: ["${HASH}"]\n    advertisers: [101]\n`, '/run/teams/none.yaml': 'teams: {}\n' })
    expect(err.problems).toContain(`PLATFORM_BASE_URL: not set, but ${found} configured; ${ASK}`)
  })

  it('DEMO=1 runs the sandbox whatever else is set; the proxy stays on loopback unless HOST says otherwise', () => {
    const config = load({ DEMO: '1', REDIS_URL: 'redis://cache:6379' }, `teams:\n  growth:\n    keys: ["${HASH}"]\n    advertisers: [101]\n`)
    expect(config.demo).toBe(true)
    expect(config.host).toBe('127.0.0.1')
    expect(load({ DEMO: '1', HOST: '0.0.0.0' }).host).toBe('0.0.0.0')
    expect(load({ DEMO: '1' }, 'host: 10.0.0.5\n').host).toBe('10.0.0.5')
  })

  it('DEMO=0 or empty is no request; another value is refused', () => {
    expect(load({ DEMO: '0' }).demo).toBe(true)
    expect(load({ DEMO: '0', PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }).demo).toBe(false)
    expect(problem({ DEMO: 'yes' }).problems).toEqual(['DEMO: must be 1, or 0, empty or unset for no demo (got "yes")'])
  })

  it('with PLATFORM_BASE_URL it is never demo mode', () => {
    const config = load({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN })
    expect(config.demo).toBe(false)
    expect(config.host).toBe('0.0.0.0')
  })
})

describe('admin tokens an authorization header carries', () => {
  const ADMIN = 'admin-token-0123456789abcdef'
  it('refuses an ADMIN_TOKEN or ADMIN_VIEWER_TOKEN the admin listener could never match: `Bearer <token>`, a space or a character outside printable ASCII, never repeating it', () => {
    // The listener takes `authorization: Bearer <token>` with no space in the token: such a
    // token would lock every operator out of the admin listener and the console.
    const bearer = problem({ ADMIN_TOKEN: `Bearer ${ADMIN}` })
    expect(bearer.problems).toEqual(['ADMIN_TOKEN: starts with "Bearer ", as an authorization header does; it must hold the token alone (the content is not shown)'])
    const file = problem({ ADMIN_TOKEN_FILE: '/run/secrets/admin-token' }, undefined, { '/run/secrets/admin-token': `Bearer ${ADMIN}\n` })
    expect(file.problems).toEqual(['ADMIN_TOKEN: starts with "Bearer ", as an authorization header does; it must hold the token alone (the content is not shown)'])
    const quote = problem({ ADMIN_VIEWER_TOKEN: `\u201c${ADMIN}\u201d` })
    expect(quote.problems).toEqual(['ADMIN_VIEWER_TOKEN: holds a space or a character outside printable ASCII, which no authorization header carries; it must hold the token alone (the content is not shown)'])
    const space = problem({ ADMIN_TOKEN: `${ADMIN.slice(0, 8)} ${ADMIN.slice(8)}` })
    expect(space.problems).toEqual(['ADMIN_TOKEN: holds a space or a character outside printable ASCII, which no authorization header carries; it must hold the token alone (the content is not shown)'])
    for (const err of [bearer, file, quote, space]) expect(err.message).not.toContain(ADMIN.slice(8))
    // Printable ASCII stays a token, a word `Bearer` inside included.
    expect(load({ ADMIN_TOKEN: 'Bearer_admin-token-0123456789' }).admin.token).toBe('Bearer_admin-token-0123456789')
  })
})

describe('messages that say what to do', () => {
  it('a short ADMIN_TOKEN or GATEWAY_SECRET names the minimum length, never the value', () => {
    expect(problem({ ADMIN_TOKEN: 'short-admin' }).problems).toEqual(['ADMIN_TOKEN: must be at least 16 characters long'])
    expect(problem({ GATEWAY_SECRET: 'short-secret' }).problems).toEqual(['GATEWAY_SECRET: must be at least 16 characters long'])
    expect(problem({ GATEWAY_SECRET_FILE: '/run/secrets/g' }, undefined, { '/run/secrets/g': 'tiny\n' }).problems).toEqual(['GATEWAY_SECRET: must be at least 16 characters long'])
  })

  it('a token file that is missing or empty stops the start, for the default and a named credential', () => {
    expect(problem({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN_FILE: '/run/secrets/none' }).problems).toEqual([
      'PLATFORM_TOKEN_FILE: /run/secrets/none cannot be read (ENOENT); it must hold the platform token',
    ])
    expect(problem({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN_FILE: '/run/secrets/e' }, undefined, { '/run/secrets/e': ' \n' }).problems).toEqual([
      'PLATFORM_TOKEN_FILE: /run/secrets/e is empty; it must hold the platform token',
    ])
    const named = problem({ PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }, 'credentials:\n  partner:\n    tokenFile: /run/secrets/partner\n')
    expect(named.problems).toEqual(['credentials.partner.tokenFile: /run/secrets/partner cannot be read (ENOENT); it must hold the platform token'])
  })

  it('one problem is one line', () => {
    expect(problem({ ADMIN_TOKEN: 'short-admin' }).message).toBe('invalid configuration: ADMIN_TOKEN: must be at least 16 characters long')
  })
})

describe('team webhooks (docs/jobs.md, "Pushed when done")', () => {
  const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
  const yaml = (url: string, hosts: string[]) => `
teams:
  growth:
    keys: ["${HASH}"]
    advertisers: [101]
    webhook: { url: "${url}", secret: "${SECRET}" }
jobs:
  webhookHosts: ${JSON.stringify(hosts)}
`
  const env = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }

  it('takes a webhook whose host is allowed; its secret is one of the team secrets scrubbed from the log (no secret of the gateway\'s a request is refused for), and no setting shows it', () => {
    const config = load(env, yaml('https://hooks.example.org/jobs', ['hooks.example.org']))
    expect(config.teams[0]?.webhook).toEqual({ url: 'https://hooks.example.org/jobs', secret: SECRET })
    expect(config.webhooks).toMatchObject({ hosts: ['hooks.example.org'], timeoutMs: 10_000, retryForMs: 3_600_000, platformHosts: ['platform.example.com'] })
    expect(config.scrubbedSecrets).toContain(SECRET)
    expect(config.secrets).not.toContain(SECRET)
    expect(JSON.stringify(config.settings)).not.toContain(SECRET)
  })

  it('refuses at load a webhook whose host is not in jobs.webhookHosts, or with none allowed', () => {
    expect(problem(env, yaml('https://evil.example.net/x', ['hooks.example.org'])).message).toMatch(/teams\.growth\.webhook\.url: evil\.example\.net is not in jobs\.webhookHosts/)
    expect(problem(env, yaml('https://hooks.example.org/x', [])).message).toMatch(/teams\.growth\.webhook\.url: jobs\.webhookHosts is empty: webhooks are off/)
  })

  it('refuses at load a jobs.webhookHosts entry no URL\'s host can equal (a port, a scheme, a path, an IPv6 address without brackets), naming it, instead of a webhook refused as not listed', () => {
    const what = 'must be a host as a URL writes it (a DNS name or IPv4 address, an IPv6 address in brackets; no scheme, port, path or wildcard), e.g. hooks.example.org, localhost, [::1]'
    for (const entry of ['localhost:9000', 'http://localhost', 'hooks.example.org/jobs', '::1', '*.example.org', 'hooks example']) {
      expect(problem(env, yaml('http://localhost:9000/jobs', ['hooks.example.org', entry])).problems, entry).toEqual([`jobs.webhookHosts.1: ${what} (got ${JSON.stringify(entry)})`])
    }
    // Each form a URL's host takes is listed as it is written there.
    for (const [url, entry] of [['http://localhost:9000/jobs', 'localhost'], ['http://[::1]:9000/jobs', '[::1]'], ['https://10.0.0.7/x', '10.0.0.7'], ['https://Hooks.Example.org./x', 'hooks.example.org.']] as const) {
      expect(load(env, yaml(url, [entry])).teams[0]?.webhook?.url, url).toBe(url)
    }
  })

  it('refuses at load a jobs.webhookHosts entry a URL writes otherwise (an IPv4 address in short or hex form, an IPv6 address uncompressed), saying how a URL writes it, and only that', () => {
    const what = 'must be a host as a URL writes it (a DNS name or IPv4 address, an IPv6 address in brackets; no scheme, port, path or wildcard), e.g. hooks.example.org, localhost, [::1]'
    for (const [entry, url, written] of [
      ['0x7f.0.0.2', 'http://127.0.0.2/jobs', '127.0.0.2'],
      ['1.2.3', 'http://1.2.0.3/jobs', '1.2.0.3'],
      ['010.0.0.7', 'http://8.0.0.7/jobs', '8.0.0.7'],
      ['[0:0:0:0:0:0:0:1]', 'http://[::1]:9000/jobs', '[::1]'],
      ['[::FFFF:127.0.0.1]', 'http://[::ffff:7f00:1]:9000/jobs', '[::ffff:7f00:1]'],
    ] as const) {
      expect(problem(env, yaml(url, ['hooks.example.org', entry])).problems, entry).toEqual([`jobs.webhookHosts.1: ${what} (got ${JSON.stringify(entry)}; a URL writes it ${written})`])
    }
    expect(problem(env, yaml('http://localhost:9000/jobs', ['localhost', '300.1.1.1'])).problems).toEqual([`jobs.webhookHosts.1: ${what} (got "300.1.1.1"; no URL has it as its host)`])
  })

  it('refuses at load a webhook at the platform\'s own host, even when allowed', () => {
    const err = problem(env, yaml('https://platform.example.com/hook', ['platform.example.com']))
    expect(err.message).toMatch(/teams\.growth\.webhook\.url: platform\.example\.com is the platform's own host, not a receiver: .*let a team call the platform.*; point the webhook at a receiver on another host/)
    expect(err.message.split('\n').filter((line) => line.includes('webhook.url'))).toHaveLength(1)
    expect(err.message).not.toContain(SECRET)
  })

  // A receiver decodes the key with its language's standard base64 decoder (Python's
  // base64.b64decode, Go's base64.StdEncoding, the Standard Webhooks libraries), which refuses
  // a text not padded to a multiple of 4 characters: every push would fail its check.
  it.each([
    ['20 bytes without its =', `whsec_${Buffer.alloc(20, 9).toString('base64').replace(/=+$/, '')}`],
    ['19 bytes without its ==', `whsec_${Buffer.alloc(19, 9).toString('base64').replace(/=+$/, '')}`],
    ['of a length no base64 has', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwA'],
  ])('refuses a secret whose base64 is %s, saying to pad it, without repeating it', (_what, secret) => {
    const err = problem(env, yaml('https://hooks.example.org/x', ['hooks.example.org']).replace(SECRET, secret))
    expect(err.message).toContain('teams.growth.webhook.secret: must be whsec_ and the base64 of at least 18 random bytes, padded with = to a multiple of 4 characters as openssl rand -base64 writes it')
    expect(err.message).not.toContain(secret.slice('whsec_'.length))
  })

  it('takes a padded secret of any length from 18 bytes', () => {
    for (const bytes of [18, 19, 20, 32]) {
      const secret = `whsec_${Buffer.alloc(bytes, 7).toString('base64')}`
      expect(load(env, yaml('https://hooks.example.org/x', ['hooks.example.org']).replace(SECRET, secret)).teams[0]?.webhook?.secret).toBe(secret)
    }
  })

  it('refuses a secret not of the whsec_<base64> form, without repeating it', () => {
    const err = problem(env, yaml('https://hooks.example.org/x', ['hooks.example.org']).replace(SECRET, 'plain-secret-value-123456'))
    expect(err.message).toMatch(/teams\.growth\.webhook\.secret/)
    expect(err.message).not.toContain('plain-secret-value-123456')
  })
})

describe('admin.hosts (ADMIN_HOSTS)', () => {
  const PLATFORM = { PLATFORM_BASE_URL: BASE, PLATFORM_TOKEN: TOKEN }

  it('takes a comma-separated ADMIN_HOSTS over the file\'s list, spaces and empty items left out', () => {
    const yaml = 'admin:\n  hosts: [from-file.example]\n'
    expect(load(PLATFORM, yaml).admin.hosts).toEqual(['from-file.example'])
    expect(load({ ...PLATFORM, ADMIN_HOSTS: ' gw-admin, gw-admin.reports.svc. ,,' }, yaml).admin.hosts).toEqual(['gw-admin', 'gw-admin.reports.svc.'])
  })

  it('refuses a name with a port, a scheme or a wildcard, saying what a name is and naming the variable that gave it', () => {
    const what = 'must be a DNS name (letters, digits, -, _ and dots; no port, no scheme, no wildcard), e.g. report-gateway-admin.reports.svc'
    for (const name of ['gw-admin:8081', 'http://gw-admin', '*.reports.svc', 'gw admin', '-gw']) {
      const { problems } = problem({ ...PLATFORM, ADMIN_HOSTS: `gw-admin,${name}` })
      expect(problems, name).toEqual([`ADMIN_HOSTS: ${what} (got ${JSON.stringify(name)})`])
    }
    // From the config file, the setting's item.
    expect(problem(PLATFORM, 'admin:\n  hosts: [gw-admin, "*.reports.svc"]\n').problems).toEqual([`admin.hosts.1: ${what} (got "*.reports.svc")`])
  })
})
