import { describe, expect, it } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { demoConfig, demoCurl } from '../../src/demo.js'
import type { Sandbox } from '../../src/sandbox/sandbox.js'
import { loadConfigFrom } from '../helpers/load-config.js'

// DEMO=1 runs the sandbox whatever else is set, the configured teams included (the exit-78
// line of a configuration without PLATFORM_BASE_URL offers it): demo mode adds its team for
// the run beside them, never in place of one. The README's own first team is named `demo`.
const SANDBOX = { url: 'http://127.0.0.1:40123', maxReportDays: 366, credentials: { username: 'demo@sandbox.local', password: 'sandbox-demo-password', clientId: 2, clientSecret: 'sandbox-demo-client-secret' } } as unknown as Sandbox
const OWN_KEY = 'rgw_own_key_of_the_configured_demo_team_0000'
const CONFIG_PATH = '/virtual/teams.yaml'

function demoWith(teams: string) {
  return demoConfig(loadConfigFrom({ DEMO: '1', CONFIG_FILE: CONFIG_PATH }, { [CONFIG_PATH]: teams }), SANDBOX)
}

describe('demo mode\'s team for the run', () => {
  it('is named demo, beside the configured teams', () => {
    const { config, key } = demoWith(`teams:\n  growth:\n    keys: ["${hashApiKey(OWN_KEY)}"]\n    advertisers: [101]\n`)
    expect(config.teams.map((t) => t.name)).toEqual(['growth', 'demo'])
    expect(config.teams.find((t) => t.name === 'demo')?.keys.map((k) => k.hash)).toEqual([hashApiKey(key)])
  })

  it('keeps a configured team named demo, its keys and scope, and takes the first free name after it', () => {
    const { config, key } = demoWith(`teams:\n  demo:\n    keys: ["${hashApiKey(OWN_KEY)}"]\n    advertisers: [101]\n  demo-2:\n    keys: ["${hashApiKey(`${OWN_KEY}2`)}"]\n    advertisers: [102]\n`)
    expect(config.teams.map((t) => t.name)).toEqual(['demo', 'demo-2', 'demo-3'])
    const own = config.teams.find((t) => t.name === 'demo')
    expect([own?.keys.map((k) => k.hash), [...(own?.advertisers ?? [])]]).toEqual([[hashApiKey(OWN_KEY)], [101]])
    const run = config.teams.find((t) => t.name === 'demo-3')
    expect([run?.keys.map((k) => k.hash), run?.advertisers, run?.write, run?.refresh]).toEqual([[hashApiKey(key)], null, true, true])
  })
})

describe('demo mode\'s settings in force (GET /admin/config)', () => {
  it('shows a configured Redis set aside: no address, of source demo', () => {
    const { config } = demoConfig(loadConfigFrom({ DEMO: '1', REDIS_URL: 'redis://127.0.0.1:16411', GATEWAY_SECRET: 'demo-config-gateway-secret-0123456789' }, {}), SANDBOX)
    expect(config.redis.url).toBeNull()
    expect(config.settings.find((s) => s.setting === 'redis.url')).toMatchObject({ value: null, source: 'demo' })
  })
})

describe('demo mode\'s login', () => {
  it('goes to the bundled sandbox\'s token route, whatever PLATFORM_TOKEN_URL says', () => {
    // PLATFORM_TOKEN_URL alone started demo mode ("nothing configured") with its login sent
    // there: a path the sandbox does not serve (404: no token, the banner's curl line 502
    // GW_PLATFORM_AUTH), or an absolute URL, another server, sent the sandbox's login (black-box pass).
    for (const tokenUrl of ['/x', 'http://127.0.0.1:9/oauth/token']) {
      const { config } = demoConfig(loadConfigFrom({ DEMO: '1', PLATFORM_TOKEN_URL: tokenUrl }, {}), SANDBOX)
      expect(config.credentials.default?.login?.tokenUrl).toBe('/oauth/token')
    }
    const { config } = demoConfig(loadConfigFrom({}, {}), SANDBOX)
    expect(config.credentials.default?.login?.tokenUrl).toBe('/oauth/token')
  })
})

describe('demo mode\'s platform credential, set aside', () => {
  it('reads no PLATFORM_TOKEN_FILE: one missing or empty does not stop the start, the sandbox\'s login stands in', () => {
    for (const files of [{}, { '/run/secrets/platform-token': '\n' }] as Record<string, string>[]) {
      const { config } = demoConfig(loadConfigFrom({ DEMO: '1', PLATFORM_BASE_URL: 'https://platform.example', PLATFORM_TOKEN_FILE: '/run/secrets/platform-token' }, files), SANDBOX)
      expect([config.credentials.default?.tokenFile, config.credentials.default?.login?.username]).toEqual([null, 'demo@sandbox.local'])
      expect(config.warnings).toContainEqual(expect.stringContaining('sets aside the configured platform'))
    }
  })

  it('asks nothing of a PLATFORM_TOKEN it sets aside: one with a space, or a header\'s value pasted, does not stop the start', () => {
    for (const token of ['platform token', 'Bearer platform-token-0000000']) {
      const { config } = demoConfig(loadConfigFrom({ DEMO: '1', PLATFORM_BASE_URL: 'https://platform.example', PLATFORM_TOKEN: token }), SANDBOX)
      expect([config.credentials.default?.token, config.credentials.default?.login?.username]).toEqual([null, 'demo@sandbox.local'])
    }
  })
})

describe('the demo banner\'s curl line', () => {
  it('goes to the address the proxy listener is bound to (HOST), a wildcard\'s by loopback, IPv6 in brackets', () => {
    const url = (host: string) => /'(http:\/\/[^/]+)\//.exec(demoCurl(host, 18700, 'rgw_k', 101))?.[1]
    expect(['127.0.0.1', '127.0.0.2', '0.0.0.0', '::', '::1', 'gateway.local'].map(url)).toEqual([
      'http://127.0.0.1:18700', 'http://127.0.0.2:18700', 'http://127.0.0.1:18700', 'http://127.0.0.1:18700', 'http://[::1]:18700', 'http://gateway.local:18700',
    ])
  })
})
