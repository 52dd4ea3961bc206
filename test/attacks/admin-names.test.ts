import { describe, expect, it } from 'vitest'
import type { AddressInfo } from 'node:net'
import type { Config } from '../../src/config.js'
import { hashApiKey } from '../../src/access/api-keys.js'
import { sandboxLoginEnv, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { rawRequest } from '../helpers/sandbox-gateway.js'

// A name the config gives (a team's, a credential's) is also a segment of an admin call's
// path: DELETE /admin/suspensions/{team}, /admin/credentials/{name}/token. Every name the
// config takes must be one those calls reach, as an operator's client sends it: `.` and
// `..` are dot segments that every client removes (WHATWG URLs, curl: `%2E%2E` too), and
// the router takes a path parameter of 100 characters at most.

const ADMIN_TOKEN = 'names-admin-token-0123456789abcdef'
const KEY = 'names-team-key-0123456789abcdef0123456789'

/** The config `load` makes, or null when it refuses it with `problem` among its problems. */
function loaded(load: () => Config, problem: string): Config | null {
  try {
    return load()
  } catch (err) {
    expect((err as Error).message).toContain(problem)
    return null
  }
}

describe('names the config gives, as admin calls reach them', () => {
  const sandbox = useSandbox()
  const gateways = useGateways()

  async function adminPort(gw: TestGateway): Promise<number> {
    await gw.admin.listen({ host: '127.0.0.1', port: 0 })
    return (gw.admin.server.address() as AddressInfo).port
  }

  /** The status of `method path` sent as a client sends it: by fetch, which removes dot segments. */
  async function call(port: number, method: string, path: string): Promise<{ status: number; body: string }> {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    return { status: res.status, body: await res.text() }
  }

  it('a team the config takes can have its suspension lifted: `.`, `..` and names over 64 characters are refused at load', async () => {
    const refused: string[] = []
    for (const name of ['..', '.', 'n'.repeat(101), 'm'.repeat(65), 'l'.repeat(64), '...', '.a', 'a..b']) {
      const yaml = `teams:\n  ${JSON.stringify(name)}:\n    keys: ["${hashApiKey(KEY)}"]\n    advertisers: ["*"]\n`
      const env = { PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), ADMIN_TOKEN }
      const config = loaded(() => testConfig(env, yaml), `teams: ${JSON.stringify(name)} is not a valid team name (letters, digits, _ . - only, 64 at most, not . or ..)`)
      if (config === null) {
        refused.push(name)
        continue
      }
      const gw = await gateways.build(config)
      // The team's request holds the login's password: the team is suspended.
      const hit = await gw.proxy.inject({ method: 'GET', url: `/api/v1/campaign/list?userId=101&q=${encodeURIComponent(sandbox.credentials.password)}`, headers: { 'x-api-key': KEY } })
      expect(hit.statusCode, name).toBe(400)
      const port = await adminPort(gw)
      const lift = await call(port, 'DELETE', `/admin/suspensions/${encodeURIComponent(name)}`)
      expect(lift, name).toEqual({ status: 200, body: JSON.stringify({ team: name, lifted: true, replicas: 'this replica only' }) })
    }
    expect(refused).toEqual(['..', '.', 'n'.repeat(101), 'm'.repeat(65)])
  })

  it('a credential the config takes has its admin calls: names over 64 characters are refused at load', async () => {
    const refused: string[] = []
    for (const name of ['c'.repeat(101), 'd'.repeat(65), 'e'.repeat(64)]) {
      const yaml = `credentials:\n  ${name}: {}\n`
      const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), [`CREDENTIAL_${name.toUpperCase()}_TOKEN`]: sandbox.issueToken(), ADMIN_TOKEN }
      const config = loaded(() => testConfig(env, yaml), `credentials: ${JSON.stringify(name)} is not a valid credential name (lower-case letters, digits, _ - only, starting with a letter, 64 at most)`)
      if (config === null) {
        refused.push(name)
        continue
      }
      const gw = await gateways.build(config)
      const port = await adminPort(gw)
      expect((await call(port, 'GET', `/admin/credentials/${name}/token`)).status, name).toBe(200)
    }
    expect(refused).toEqual(['c'.repeat(101), 'd'.repeat(65)])
  })

  it('the raw `..` of a client that sends it as it is reaches no admin call', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }))
    const port = await adminPort(gw)
    for (const path of ['/admin/suspensions/..', '/admin/suspensions/%2E%2E', '/admin/suspensions/..%2F..%2Fcache', '/admin/suspensions/all%00', '/admin/suspensions/all%2Fx']) {
      const res = await rawRequest(port, `DELETE ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${ADMIN_TOKEN}\r\nconnection: close\r\n\r\n`)
      expect([400, 404], `${path}: ${res.status}`).toContain(res.status)
    }
  })
})
