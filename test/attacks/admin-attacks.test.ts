import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import type { AddressInfo } from 'node:net'
import { freshAddress } from '../helpers/admin-addresses.js'
import { KEYS, REPORT_PATH } from '../helpers/build-gateway.js'
import { rawHttp, rawRequest } from '../helpers/sandbox-gateway.js'
import { leakedSecrets, runSecrets } from '../helpers/secret-scan.js'
import { ADMIN_TOKEN, useAttackGateway } from './attack-gateway.js'

// The admin listener attacked by an outsider and by a team: every admin call without its
// token, with a team's key, with a wrong token, is the same 401 (nothing said of what
// exists); and no admin answer, the console's included, holds the platform token or a
// team key, after the teams used the gateway.

const DOC = JSON.parse(readFileSync(new URL('../../docs/admin-openapi.json', import.meta.url), 'utf8')) as { paths: Record<string, Record<string, unknown>> }
const ADMIN_CALLS = Object.entries(DOC.paths)
  .filter(([path]) => path.startsWith('/admin/'))
  .flatMap(([path, ops]) => Object.keys(ops).map((method) => ({ method: method.toUpperCase(), url: path.replace('{name}', 'default') })))

describe('the admin listener attacked', () => {
  const sg = useAttackGateway()
  // Each call from an address of its own: the wrong tokens below would otherwise lock 127.0.0.1 out (admin-guesses.test.ts).
  const admin = (method: string, url: string, headers: Record<string, string> = {}) =>
    sg.gw.admin.inject({ method: method as 'GET', url, headers, remoteAddress: freshAddress(), ...(method === 'PUT' ? { payload: { token: 'x'.repeat(40), level: 'info' } } : {}) })

  it('every admin call without the admin token, with a team key or a wrong one, is the 401 those headers get on a path that does not exist', async () => {
    expect(ADMIN_CALLS.length).toBeGreaterThan(15)
    const strangers: Record<string, string>[] = [
      {},
      { authorization: `Bearer ${KEYS.all}` },
      { 'x-api-key': KEYS.all },
      { authorization: `Bearer ${ADMIN_TOKEN.slice(0, -1)}` },
      { authorization: `Bearer ${ADMIN_TOKEN} ` + 'x' },
      { authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}` },
      { authorization: ADMIN_TOKEN },
      { authorization: `Bearer ${ADMIN_TOKEN.toUpperCase()}` },
    ]
    const shape = (res: { statusCode: number; headers: Record<string, unknown>; body: string }) => ({
      status: res.statusCode,
      body: res.body,
      challenge: res.headers['www-authenticate'],
      cacheControl: res.headers['cache-control'],
      frame: res.headers['x-frame-options'],
      sniff: res.headers['x-content-type-options'],
      type: res.headers['content-type'],
    })
    // The message may say what is wrong with the headers' form (key-forms.test.ts), never which path exists nor whose key or which token is near.
    const wrongToken = await admin('GET', '/admin/no-such-call', { authorization: `Bearer ${ADMIN_TOKEN.slice(0, -1)}` })
    for (const headers of strangers) {
      const reference = await admin('GET', '/admin/no-such-call', headers)
      expect(shape(reference)).toMatchObject({ status: 401, challenge: 'Bearer realm="report-gateway admin"', cacheControl: 'no-store', frame: 'DENY', sniff: 'nosniff' })
      expect(JSON.parse(reference.body)).toMatchObject({ statusCode: 401, code: 'GW_UNAUTHORIZED', error: 'Unauthorized' })
      expect(reference.body).not.toContain(ADMIN_TOKEN.slice(0, 12))
      if (/^Bearer \S+$/.test(headers.authorization ?? '')) expect(shape(reference)).toEqual(shape(wrongToken))
      for (const { method, url } of ADMIN_CALLS) {
        const res = await admin(method, url, headers)
        expect(shape(res), `${method} ${url} ${JSON.stringify(headers)}`).toEqual(shape(reference))
      }
    }
    // Nothing was changed by any of them.
    expect((await admin('GET', '/admin/token', { authorization: `Bearer ${ADMIN_TOKEN}` })).json()).toMatchObject({ usable: true })
  })

  it('no admin answer, the console\'s included, holds the platform token or a team key once the teams used the gateway', async () => {
    for (const key of Object.values(KEYS)) await fetch(`${sg.url}${REPORT_PATH}?advertiserId=101&dateFrom=2025-06-01&dateTo=2025-06-30`, { headers: { 'x-api-key': key, prefer: 'respond-async' } })
    await fetch(`${sg.url}/api/v1/campaign/get`, { method: 'POST', headers: { 'x-api-key': KEYS.writer, 'content-type': 'application/json' }, body: '{"userId":101}' })
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` }
    const reads = [
      ...ADMIN_CALLS.filter((c) => c.method === 'GET').map((c) => c.url),
      `/admin/cache/entry?url=${encodeURIComponent(`${REPORT_PATH}?advertiserId=101&dateFrom=2025-06-01&dateTo=2025-06-30`)}`,
      '/admin/usage?format=csv', '/console', '/console/console-page.js', '/console/console-deliveries.js', '/metrics', '/readyz', '/healthz', '/docs', '/docs/json',
    ]
    const secrets = runSecrets(sg.sandbox)
    // The gateway's platform token is among them: its call above carried it.
    expect([...secrets].some((s) => s.startsWith('eyJ'))).toBe(true)
    for (const url of reads) {
      const res = await admin('GET', url, auth)
      expect(res.statusCode, url).toBeLessThan(500)
      expect(leakedSecrets(`${JSON.stringify(res.headers)}\n${res.body}`, secrets), url).toEqual([])
    }
  })

  it('a cache-entry URL holding a team key is 400 saying so, never echoed: no report the gateway caches holds one (its reads refuse it)', async () => {
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` }
    const report = `${REPORT_PATH}?advertiserId=101&dateFrom=2025-06-01&dateTo=2025-06-30`
    expect((await fetch(`${sg.url}${report}&k=${KEYS.growth}`, { headers: { 'x-api-key': KEYS.all } })).status).toBe(400)
    for (const [method, url] of [
      ['GET', `${report}&k=${KEYS.growth}`],
      ['DELETE', `${report}&k=${encodeURIComponent(KEYS.growth)}`],
      ['GET', `https://gateway.example${report}&k=${KEYS.growth.replace('_', '%5F')}`],
    ] as const) {
      const res = await admin(method, `/admin/cache/entry?url=${encodeURIComponent(url)}`, auth)
      expect(res.statusCode, `${method} ${url}`).toBe(400)
      expect(res.json()).toMatchObject({ code: 'GW_BAD_REQUEST', message: 'url: holds a team key; no report the gateway caches holds one (the value is not shown)' })
      expect(res.body).not.toContain(KEYS.growth.slice(4))
    }
  })

  it('a refusal that quotes a value sent quotes no secret of the gateway\'s nor a team key: the admin token or the platform token as a parameter, a key leading other characters', async () => {
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` }
    // A read first: the gateway's platform token is then among the run's secrets.
    expect((await fetch(`${sg.url}${REPORT_PATH}?advertiserId=101&dateFrom=2025-07-01&dateTo=2025-07-07`, { headers: { 'x-api-key': KEYS.all } })).status).toBe(200)
    const platformToken = [...runSecrets(sg.sandbox)].find((s) => s.startsWith('eyJ')) as string
    expect(platformToken).toBeDefined()
    for (const value of [ADMIN_TOKEN, platformToken, `${KEYS.growth}x`]) {
      const url = `${REPORT_PATH}?advertiserId=${encodeURIComponent(value)}&dateFrom=2025-06-01&dateTo=2025-06-30`
      const entry = await admin('GET', `/admin/cache/entry?url=${encodeURIComponent(url)}`, auth)
      expect(entry.statusCode).toBe(400)
      expect(leakedSecrets(entry.body, new Set([ADMIN_TOKEN, platformToken, KEYS.growth]))).toEqual([])
    }
    const read = await fetch(`${sg.url}${REPORT_PATH}?advertiserId=101&dateFrom=2025-06-01&dateTo=2025-06-30&byDate=${KEYS.all}x`, { headers: { 'x-api-key': KEYS.all } })
    expect(read.status).toBe(400)
    expect(await read.text()).not.toContain(KEYS.all.slice(4))
  })

  it('an operator\'s body over 64 KiB is 413 on every call that takes one, before it is parsed: a megabyte of nested JSON held the replica for 100 to 500 ms each', async () => {
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }
    const deep = (n: number) => `{"level":${'['.repeat(n)}${']'.repeat(n)}}`
    for (const url of ['/admin/log-level', '/admin/token', '/admin/credentials/default/token']) {
      for (const payload of [deep(33_000), `{"token":"${'a'.repeat(70_000)}"}`]) {
        const sent = await sg.gw.admin.inject({ method: 'PUT', url, headers: auth, payload, remoteAddress: freshAddress() })
        expect(sent.statusCode, `${url} ${payload.length}`).toBe(413)
        expect(sent.json()).toMatchObject({ code: 'GW_PAYLOAD_TOO_LARGE', message: 'the request body is larger than the limit of 65536 bytes' })
      }
    }
    // The longest body a call takes is far below it: a token of 8192 characters, each written as a JSON escape.
    const longest = `{"token":"${'\\u0061'.repeat(8192)}"}`
    expect(longest.length).toBeLessThan(65_536)
    const res = await sg.gw.admin.inject({ method: 'PUT', url: '/admin/token', headers: auth, payload: longest, remoteAddress: freshAddress() })
    expect(res.json()).toMatchObject({ code: 'GW_TOKEN_REJECTED' })
  })

  it('a request refused before any admin route (a path that is no percent-encoding, a head Node cannot read) carries the admin headers too', async () => {
    await sg.gw.admin.listen({ host: '127.0.0.1', port: 0 })
    const { port } = sg.gw.admin.server.address() as AddressInfo
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` }
    const refusals: [string, Buffer][] = [
      ['a path that is no percent-encoding', rawHttp('GET', '/admin/%zz', { key: null, headers: auth })],
      ['an unknown method', rawHttp('FOO', '/admin/whoami', { key: null, headers: auth })],
      ['a control character in the target', rawHttp('GET', '/admin/who\u0001ami', { key: null, headers: auth })],
      ['a head larger than Node reads', rawHttp('GET', '/admin/whoami', { key: null, headers: { ...auth, 'x-pad': 'a'.repeat(17_000) } })],
    ]
    for (const [what, bytes] of refusals) {
      const res = await rawRequest(port, bytes)
      expect(res.status, what).toBeGreaterThanOrEqual(400)
      expect([res.headers['cache-control'], res.headers['x-frame-options'], res.headers['x-content-type-options']], what).toEqual(['no-store', 'DENY', 'nosniff'])
    }
  })
})
