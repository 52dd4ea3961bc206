import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { sha256Hex } from '../../src/config/secret-digest.js'
import { KEYS, TEAMS_YAML, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'
import { eachSecretAlone } from '../helpers/suspensions.js'

// Contract, "Logs": every configured secret is redacted from every line. A named token of
// ADMIN_TOKENS_FILE is known by its digest alone: a caller's path or user-agent holding one
// as a word is written `[REDACTED]` whole, as a span's `url.path` and `user_agent.original`
// are ("No secret of the gateway's in a span"), on both listeners.

const NAMED_TOKEN = 'named-operator-token_0123456789'
const tokensFile = join(mkdtempSync(join(tmpdir(), 'rgw-named-log-')), 'admin-tokens')
writeFileSync(tokensFile, `ops:sha256:${sha256Hex(NAMED_TOKEN)}\n`)

const sandbox = useSandbox()
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKENS_FILE: tokensFile }, TEAMS_YAML))
eachSecretAlone(() => gw)

describe('a named token of ADMIN_TOKENS_FILE in a caller\'s path or user-agent', () => {
  it('is written [REDACTED] whole in the access line, with a key or without', async () => {
    for (const headers of [{}, { 'x-api-key': KEYS.all }]) {
      const res = await gw.proxy.inject({ method: 'GET', url: `/x/${NAMED_TOKEN}`, headers: { ...headers, 'user-agent': `probe/1 ${NAMED_TOKEN}` } })
      expect(res.statusCode).toBe(404)
    }
    const lines = gw.logs.records().filter((r) => r.msg === 'request')
    expect(lines.map((r) => [r.path, r.userAgent])).toEqual([
      ['[REDACTED]', '[REDACTED]'],
      ['[REDACTED]', '[REDACTED]'],
    ])
    expect(gw.logs.text()).not.toContain(NAMED_TOKEN)
  })

  it("is written [REDACTED] in the admin listener's audit line of a refused call", async () => {
    const res = await gw.admin.inject({ method: 'GET', url: `/admin/${NAMED_TOKEN}` })
    expect(res.statusCode).toBe(401)
    expect(gw.logs.records().filter((r) => r.action === 'admin-auth').map((r) => r.path)).toEqual(['[REDACTED]'])
    expect(gw.logs.text()).not.toContain(NAMED_TOKEN)
  })

  it('leaves a path and a user-agent holding none as they came', async () => {
    await gw.proxy.inject({ method: 'GET', url: '/x/an-ordinary-long-path-segment', headers: { 'user-agent': 'dashboards/2.1 (an ordinary long agent)' } })
    const line = gw.logs.records().findLast((r) => r.msg === 'request')
    expect([line?.path, line?.userAgent]).toEqual(['/x/an-ordinary-long-path-segment', 'dashboards/2.1 (an ordinary long agent)'])
  })

  it("as a segment of a team's request path is refused as a secret of the gateway's: the platform never gets it", async () => {
    sandbox.clearRequests()
    const res = await gw.proxy.inject({ method: 'GET', url: `/api/v1/campaign/${NAMED_TOKEN}/get`, headers: { 'x-api-key': KEYS.all } })
    expect(res.statusCode).toBe(400)
    expect(res.json().message).toMatch(/^request target: holds a secret of the gateway's/)
    expect(sandbox.countRequests(() => true)).toBe(0)
  })
})
