import { connect } from 'node:net'
import { describe, expect, it } from 'vitest'
import { leakedSecrets } from '../helpers/secret-scan.js'
import { testConfig } from '../helpers/build-gateway.js'
import { KEYS, rawHttp, rawRequest } from '../helpers/sandbox-gateway.js'
import { ADMIN_TOKEN, call, itLoggedNoSecret, newCampaign, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// Leaks. The caller's bytes in a trace log line, passwords
// in configuration errors, caller credentials and forwarding headers on their way to the
// platform, and `expect: 100-continue` turned into a 502.

const VIEWER_TOKEN = 'attack-viewer-token-0123456789abcdef'
const sg = useAttackGateway({ env: { ADMIN_VIEWER_TOKEN: VIEWER_TOKEN } })
const CALLER_COOKIE = 'caller-session-cookie-0123456789'

describe('a malformed request at LOG_LEVEL=trace', () => {
  it('is a 400, and its bytes (API key, admin token) reach no log line', async () => {
    const malformed = [
      `GET /api/v1/report/campaigns/get HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${KEYS.all}\r\nauthorization: Bearer ${ADMIN_TOKEN}\r\nbroken header line\r\n\r\n`,
      `GET /api/v1/x HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${KEYS.writer}\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab`,
      `POST /api/v1/x HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${KEYS.growth}\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n`,
    ]
    for (const bytes of malformed) {
      const res = await rawRequest(sg.port, bytes)
      expect(res.status).toBe(400)
      expect(res.text).not.toContain(KEYS.all)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(leakedSecrets(sg.gw.logs.text(), [KEYS.all, KEYS.writer, KEYS.growth, ADMIN_TOKEN])).toEqual([])
    expect(sg.callerRequests()).toEqual([])
  })
})

describe('configuration errors', () => {
  it.each([
    ['REDIS_URL', 'http://user:s3cret-redis-pw@127.0.0.1:6379'],
    ['REDIS_URL', 'ftp://:s3cret-redis-pw@127.0.0.1'],
    ['REDIS_URL', 'http://user:s3cret@redis-pw@127.0.0.1'],
    ['PLATFORM_BASE_URL', 'https://user:s3cret-base-pw@platform.example/api'],
    ['PLATFORM_BASE_URL', 'https://user:s3cret@base-pw@platform.example/api'],
    ['PLATFORM_BASE_URL', 'user:s3cret-base-pw@platform.example'],
  ])('%s %s: the message masks the password', (name, value) => {
    let message = ''
    try {
      testConfig({ PLATFORM_BASE_URL: 'http://127.0.0.1:1', PLATFORM_TOKEN: 'tok-123456789', [name]: value })
    } catch (err) {
      message = (err as Error).message
    }
    expect(message).toContain(name)
    expect(message).not.toMatch(/s3cret|redis-pw|base-pw/)
  })

  // A receiver's own token rides in its URL's path (Slack's /services/T…/B…/<token>) or
  // query: a webhook URL the schema refuses (no scheme, not a string) is named, not repeated.
  it.each([
    '"hooks.example.org/services/T0001/B0001/s3cret-in-path"',
    '"//hooks.example.org/hook?tok=s3cret-in-query"',
    '["https://hooks.example.org/services/T0001/B0001/s3cret-in-list"]',
  ])('a team\'s webhook.url %s the schema refuses: the message names the setting, never the URL', (url) => {
    const secret = `whsec_${Buffer.alloc(24, 7).toString('base64')}`
    const yaml = `teams:\n  growth:\n    keys: []\n    advertisers: ["*"]\n    webhook: { url: ${url}, secret: "${secret}" }\njobs:\n  webhookHosts: ["hooks.example.org"]\n`
    let message = ''
    try {
      testConfig({ PLATFORM_BASE_URL: 'http://127.0.0.1:1', PLATFORM_TOKEN: 'tok-123456789' }, yaml)
    } catch (err) {
      message = (err as Error).message
    }
    expect(message).toContain('teams.growth.webhook.url')
    expect(message).not.toMatch(/s3cret|T0001/)
  })
})

describe('headers on the way to the platform', () => {
  it('no caller credential, cookie, forwarding or override header reaches it', async () => {
    const res = await call(sg, 'POST', '/api/v1/campaign/get', {
      key: KEYS.growth,
      json: { userId: 101 },
      headers: {
        authorization: `Bearer ${KEYS.growth}`,
        cookie: `laravel_session=${CALLER_COOKIE}`,
        forwarded: 'for=10.0.0.1;host=platform.internal',
        'x-forwarded-for': '10.0.0.1',
        'x-forwarded-host': 'platform.internal',
        'x-forwarded-proto': 'https',
        'x-forwarded-prefix': '/admin',
        'x-real-ip': '10.0.0.1',
        'x-original-url': '/oauth/token',
        'x-rewrite-url': '/oauth/token',
        'x-http-method-override': 'DELETE',
        'x-csrf-token': 'abc',
        'accept-language': 'en',
        'user-agent': 'attack-test',
      },
    })
    expect(res.status).toBe(200)
    const [received] = sg.callerRequests()
    const names = Object.keys(received?.headers ?? {}).sort()
    expect(names.filter((h) => !['host', 'connection', 'content-length', 'content-type', 'accept', 'accept-encoding', 'accept-language', 'user-agent', 'x-request-id', 'authorization'].includes(h))).toEqual([])
    expect(received?.headers.authorization).not.toContain(KEYS.growth)
    expect(received?.headers['user-agent']).toBe('attack-test')
    expect(JSON.stringify(received?.headers)).not.toContain(CALLER_COOKIE)
  })

  it('a team key in the query or the body is 400 GW_BAD_REQUEST, never sent to the platform nor kept as a report\'s key', async () => {
    const sent: [string, Awaited<ReturnType<typeof call>>][] = [
      ['report query', await call(sg, 'GET', `/api/v1/report/campaigns/get?advertiserId=101&${REPORT_DATES}&api_key=${KEYS.growth}`, { key: KEYS.growth })],
      ['another team\'s key', await call(sg, 'GET', `/api/v1/report/campaigns/get?advertiserId=101&${REPORT_DATES}&note=${KEYS.all}`, { key: KEYS.growth })],
      ['proxied query', await call(sg, 'POST', `/api/v1/campaign/get?x-api-key=${KEYS.growth}`, { key: KEYS.growth, json: { userId: 101 } })],
      ['path', await call(sg, 'GET', `/api/v1/campaign/${KEYS.writer}/get`, { key: KEYS.growth })],
      ['JSON body', await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, json: { userId: 101, apiKey: KEYS.growth } })],
      ['form body', await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, body: `userId=101&api_key=${KEYS.growth}`, headers: { 'content-type': 'application/x-www-form-urlencoded' } })],
    ]
    for (const [what, res] of sent) {
      expect(res.status, what).toBe(400)
      expect(res.json, what).toMatchObject({ code: 'GW_BAD_REQUEST', message: expect.stringContaining('team key') })
      expect(JSON.stringify(res.json), what).not.toContain('rgw_')
    }
    expect(sg.callerRequests()).toEqual([])
    // Nor is it written down: the access line's path says where one was.
    expect(sg.gw.logs.records().filter((r) => r.msg === 'request' && String(r.path).includes('/api/v1/campaign/')).map((r) => r.path)).toContain('/api/v1/campaign/[REDACTED]/get')
    expect(sg.gw.logs.text()).not.toContain(KEYS.writer)
    // A key leading more key characters (`<key>x`, `<key>-`): the platform would read the key in it.
    for (const [what, target, json] of [
      ['path', `/api/v1/campaign/${KEYS.growth}x/get`, undefined],
      ['query', `/api/v1/campaign/get?note=${KEYS.growth}-`, { userId: 101 }],
      ['JSON body', '/api/v1/campaign/get', { userId: 101, note: `${KEYS.growth}_` }],
    ] as const) {
      const res = await call(sg, json === undefined ? 'GET' : 'POST', target, { key: KEYS.growth, ...(json === undefined ? {} : { json }) })
      expect([what, res.status, JSON.stringify(res.json).includes('team key')]).toEqual([what, 400, true])
    }
    expect(sg.callerRequests()).toEqual([])
    // A value that only looks like one is no key: it is passed on.
    const lookalike = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, json: { userId: 101, note: 'rgw_not_a_key_of_any_team_000000000000000000' } })
    expect(lookalike.status).toBe(200)
  })

  it('a team key percent-encoded in the target or a form, or JSON-escaped in a body, is refused as the key itself is', async () => {
    // The platform (PHP) decodes a query, a form and a JSON string before it reads them.
    const percent = (key: string) => key.replace(/_/g, '%5F').replace(/-/g, '%2d').replace(/^r/, '%72')
    const escaped = (key: string) => key.replace(/_/g, '\\u005f')
    const sent: [string, Awaited<ReturnType<typeof call>>][] = [
      ['report query', await call(sg, 'GET', `/api/v1/report/campaigns/get?advertiserId=101&${REPORT_DATES}&api_key=${percent(KEYS.growth)}`, { key: KEYS.growth })],
      ['proxied query', await call(sg, 'POST', `/api/v1/campaign/get?note=${percent(KEYS.all)}`, { key: KEYS.growth, json: { userId: 101 } })],
      ['path', await call(sg, 'GET', `/api/v1/campaign/${percent(KEYS.writer)}/get`, { key: KEYS.growth })],
      ['form body', await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, body: `userId=101&api_key=${percent(KEYS.growth)}`, headers: { 'content-type': 'application/x-www-form-urlencoded' } })],
      ['JSON body', await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, body: `{"userId":101,"apiKey":"${escaped(KEYS.growth)}"}`, headers: { 'content-type': 'application/json' } })],
    ]
    // A key in a name the parser refuses (a NUL in it) is refused as a key, not repeated in the parser's message.
    sent.push(
      ['malformed query name', await call(sg, 'GET', `/api/v1/report/campaigns/get?advertiserId=101&${REPORT_DATES}&${KEYS.growth}%00=1`, { key: KEYS.growth })],
      ['malformed form name', await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, body: `userId=101&${percent(KEYS.all)}%00=1`, headers: { 'content-type': 'application/x-www-form-urlencoded' } })],
    )
    for (const [what, res] of sent) {
      expect(res.status, what).toBe(400)
      expect(res.json, what).toMatchObject({ code: 'GW_BAD_REQUEST', message: expect.stringContaining('team key') })
      expect(JSON.stringify(res.json), what).not.toContain('rgw_')
    }
    expect(sg.callerRequests()).toEqual([])
    // Written down nowhere either, in whichever spelling it came (a user-agent the caller encoded).
    const agent = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, json: { userId: 101 }, headers: { 'user-agent': `probe/${percent(KEYS.all)}` } })
    expect(agent.status).toBe(200)
    expect(sg.callerRequests()[0]?.headers['user-agent']).toBe('probe/[REDACTED]')
    for (const key of [KEYS.all, KEYS.growth, KEYS.writer]) expect(sg.gw.logs.text()).not.toContain(percent(key).slice(0, 24))
  })

  it('expect: 100-continue is answered by the gateway: the call goes through and the platform never sees it', async () => {
    const body = '{"userId":101}'
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(sg.port, '127.0.0.1')
      let text = ''
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1')
        if (text.startsWith('HTTP/1.1 100') && text.endsWith('\r\n\r\n') && !text.includes('200')) socket.write(body)
      })
      socket.on('error', reject)
      socket.on('close', () => resolve(text))
      setTimeout(() => socket.destroy(), 10_000).unref()
      socket.write(
        `POST /api/v1/campaign/get HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\nx-api-key: ${KEYS.growth}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nexpect: 100-continue\r\n\r\n`,
      )
    })
    expect(answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /)
    const [received] = sg.callerRequests()
    expect(received?.headers.expect).toBeUndefined()
    expect(received?.body).toBe(body)
  })

  it('the platform\'s session cookie never reaches the caller', async () => {
    const res = await rawRequest(sg.port, rawHttp('POST', '/api/v1/campaign/get', { key: KEYS.growth, headers: { 'content-type': 'application/json' }, body: '{"userId":101}' }))
    expect(res.status).toBe(200)
    expect(res.text.toLowerCase()).not.toContain('set-cookie')
  })
})

describe('a platform connection that fails', () => {
  it('is 502 GW_UPSTREAM in words, naming no code of the gateway\'s HTTP client (UND_ERR_*): a write, and a read after its tries', async () => {
    for (const kind of ['reset', 'cut'] as const) {
      sg.sandbox.setFailure({ kind, times: 100 })
      const write = await call(sg, 'POST', '/api/v1/campaign/banner/create', { key: KEYS.writer, json: newCampaign(101) })
      const read = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, json: { userId: 101 } })
      sg.sandbox.setFailure({ kind: 'none' })
      for (const res of [write, read]) {
        expect(res, kind).toMatchObject({ status: 502, json: { code: 'GW_UPSTREAM', message: 'the platform failed: connection reset' } })
      }
    }
  })
})

describe('a team key in a header the gateway keeps, logs or forwards', () => {
  it('is not the request id, reaches the platform as [REDACTED], and is in no log or audit line', async () => {
    const send = (key: string, method: string, target: string, body: unknown) =>
      fetch(`${sg.url}${target}`, {
        method,
        headers: { 'x-api-key': key, 'x-request-id': KEYS.all, 'user-agent': `x ${KEYS.all}`, 'accept-language': `en;q=0.5, ${KEYS.writer}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
    const read = await send(KEYS.growth, 'POST', '/api/v1/campaign/get', { userId: 101 })
    expect(read.status).toBe(200)
    const write = await send(KEYS.writer, 'POST', '/api/v1/campaign/banner/create', newCampaign(101))
    expect(write.status).toBe(201)
    for (const res of [read, write]) {
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
      expect(await res.text()).not.toContain('rgw_')
    }
    const received = sg.callerRequests()
    expect(received).toHaveLength(2)
    for (const { headers } of received) {
      expect(JSON.stringify(headers)).not.toMatch(/rgw_/)
      expect(headers['user-agent']).toBe('x [REDACTED]')
      expect(headers['accept-language']).toBe('en;q=0.5, [REDACTED]')
    }
    const audit = await sg.gw.admin.inject({ method: 'GET', url: '/admin/audit', headers: { authorization: `Bearer ${VIEWER_TOKEN}` } })
    expect(audit.statusCode).toBe(200)
    expect(audit.body).toContain('"action":"write"')
    expect(audit.body).not.toContain('rgw_')
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(leakedSecrets(sg.gw.logs.text(), [KEYS.all, KEYS.writer, KEYS.growth])).toEqual([])
    expect(sg.gw.logs.records().filter((r) => r.msg === 'request' && String(r.userAgent).startsWith('x ')).map((r) => r.userAgent)).toEqual(['x [REDACTED]', 'x [REDACTED]'])
  })
})

itLoggedNoSecret(sg, [CALLER_COOKIE])
