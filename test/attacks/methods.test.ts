import { gunzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { KEYS } from '../helpers/build-gateway.js'
import { useReflectingGateway } from '../helpers/fixtures.js'
import { rawHttp, rawRequest, type RawResponse } from '../helpers/sandbox-gateway.js'
import { leakedSecrets } from '../helpers/secret-scan.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'
import { itLoggedNoSecret, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// Methods. A platform that reflects TRACE, as RFC 9110 says it should, hands back the
// request it got, the gateway's `authorization: Bearer <platform token>` in it; so does
// a debug page or an echo route for any method. Here the platform reflects every request
// it gets, and every method goes to the gateway in every path spelling, with a writer's
// key and a reader's: no answer carries the platform token, and only GET, HEAD, POST,
// PUT, PATCH and DELETE reach the platform. Then, against the sandbox, HEAD of a report
// is its GET without the body.

const PLATFORM_TOKEN = 'reflected-platform-token-0123456789abcdef'
const WRITER = KEYS.writer
const READER = KEYS.all

// Both teams may use every account: as much as any key can send reaches the platform.
const YAML = `
teams:
  writers:
    keys: ["${hashApiKey(WRITER)}"]
    advertisers: ["*"]
    write: true
  readers:
    keys: ["${hashApiKey(READER)}"]
    advertisers: ["*"]
`

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT', 'QUERY', 'PROPFIND', 'FOO']
const FORWARDED = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']
const ALLOW = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS'
const REPORT = `/api/v1/report/campaigns/get?advertiserId=101&${REPORT_DATES}`
/** Spellings of one path that the router takes as under /api/v1/ (`//` is then 404 to a forwarded method). */
const API_PATHS = ['/api/v1/campaign/get', '/api/v1//campaign/get', '/api/v1/campaign/get/', '/api/v1/%63ampaign/get', REPORT]
const PATHS = [...API_PATHS, '/API/v1/campaign/get']
const BODY = JSON.stringify({ userId: 101, dateFrom: '2026-01-01', dateTo: '2026-01-07' })
const WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'QUERY'])
/** What callers accept: nothing said, gzip (which the platform then sends), codings the gateway does not read. */
const ENCODINGS = [null, 'gzip, deflate, br', 'zstd, *']

/** An answer's whole text as its caller reads it: a gzipped body decoded. */
function readable(res: RawResponse): string {
  if (res.headers['content-encoding'] !== 'gzip') return res.text
  try {
    return `${res.text}\n${gunzipSync(Buffer.from(res.body, 'latin1')).toString('utf8')}`
  } catch {
    return res.text
  }
}

/** Each answer that carries the platform token, named by what was sent. */
function leaks(answers: [string, RawResponse][]): string[] {
  return answers.filter(([, res]) => leakedSecrets(readable(res), [PLATFORM_TOKEN]).length > 0).map(([what, res]) => `${what}: ${res.status}`)
}

describe('a platform that reflects every request', () => {
  const { reflecting, gw } = useReflectingGateway(PLATFORM_TOKEN, YAML)

  // A method that takes a body is sent BODY as JSON unless `body` is given (with its own content-type in `headers`).
  const send = (method: string, target: string, key: string, headers: Record<string, string> = {}, body?: string): Promise<RawResponse> => {
    if (body === undefined && WITH_BODY.has(method)) return send(method, target, key, { 'content-type': 'application/json', ...headers }, BODY)
    return rawRequest(gw.port, rawHttp(method, target, { key, headers, ...(body === undefined ? {} : { body }) }))
  }

  it('reflects the token it is sent: the stand-in is as bad as it says', async () => {
    const res = await fetch(`${reflecting.url}/api/v1/campaign/get`, { method: 'POST', headers: { authorization: `Bearer ${PLATFORM_TOKEN}` } })
    expect(res.headers.get('authorization')).toBe(`Bearer ${PLATFORM_TOKEN}`)
    expect(await res.text()).toContain(PLATFORM_TOKEN)
  })

  it.each([
    ['in its headers and body', true],
    ['in its body alone', false],
  ])('gets the platform token back to no caller, reflected %s: any method, path spelling, key or accepted coding', async (_where, echoHeaders) => {
    reflecting.echoHeaders = echoHeaders
    const answers: [string, RawResponse][] = []
    for (const [who, key] of [['writer', WRITER], ['reader', READER]] as const) {
      for (const method of METHODS) {
        for (const path of PATHS) {
          for (const encoding of ENCODINGS) {
            const res = await send(method, path, key, encoding === null ? {} : { 'accept-encoding': encoding })
            answers.push([`${who} ${method} ${path} (accept-encoding: ${encoding})`, res])
          }
        }
      }
      // CONNECT in its own form: a tunnel to the platform's address.
      answers.push([`${who} CONNECT ${new URL(reflecting.url).host}`, await send('CONNECT', new URL(reflecting.url).host, key)])
    }
    expect(leaks(answers)).toEqual([])
    // Every forwarded method did reach the platform, and fails there: its answer carried the token.
    expect(new Set(reflecting.requests.map((r) => r.method))).toEqual(new Set(FORWARDED))
    const forwarded = answers.filter(([what]) => /^writer GET \/api\/v1\/campaign\/get /.test(what))
    for (const [what, res] of forwarded) {
      expect(res.status, what).toBe(502)
      expect(JSON.parse(res.body), what).toMatchObject({ code: 'GW_UPSTREAM', message: expect.stringContaining('carried the gateway\'s token back') })
    }
    // The platform never offered a coding the gateway does not read.
    expect(reflecting.requests.map((r) => r.headers['accept-encoding'] ?? null).filter((e) => e !== null && e !== 'gzip' && e !== 'gzip, deflate, br')).toEqual([])
  })

  it('forwards none of TRACE, CONNECT, OPTIONS, whatever the key: OPTIONS is 204 with allow, any other method 405 with allow', async () => {
    for (const key of [WRITER, READER, 'rgw_unknown_key_00000000000000000000000']) {
      for (const path of API_PATHS) {
        // A path whose spelling is refused (`//`) is 404 in every method: OPTIONS is all it serves.
        const allow = path.includes('//') ? 'OPTIONS' : ALLOW
        for (const method of ['TRACE', 'CONNECT', 'QUERY', 'PROPFIND']) {
          const res = await send(method, path, key)
          expect(res.status, `${method} ${path}`).toBe(405)
          expect(res.headers.allow, `${method} ${path}`).toBe(allow)
          expect(res.headers['x-request-id'], `${method} ${path}`).toBeDefined()
          expect(JSON.parse(res.body), `${method} ${path}`).toMatchObject({ statusCode: 405, code: 'GW_METHOD_NOT_ALLOWED', error: 'Method Not Allowed', message: expect.stringContaining(method) })
        }
        const options = await send('OPTIONS', path, key)
        expect(options.status, `OPTIONS ${path}`).toBe(204)
        expect(options.headers.allow, `OPTIONS ${path}`).toBe(allow)
        expect(options.body, `OPTIONS ${path}`).toBe('')
      }
      // Outside /api/v1/ nothing is: 404, whatever the method.
      expect((await send('TRACE', '/API/v1/campaign/get', key)).status).toBe(404)
    }
    expect(reflecting.requests).toEqual([])
  })

  it('answers CONNECT to the platform\'s address 405 too, and closes the connection', async () => {
    const res = await send('CONNECT', new URL(reflecting.url).host, WRITER)
    expect(res.status).toBe(405)
    expect(res.headers.allow).toBe(ALLOW)
    expect(res.headers.connection).toBe('close')
    expect(JSON.parse(res.body)).toMatchObject({ statusCode: 405, code: 'GW_METHOD_NOT_ALLOWED', error: 'Method Not Allowed' })
    expect(reflecting.requests).toEqual([])
  })

  it('lets no method override name another method to the platform: the header is dropped, a `_method` field refused', async () => {
    const answers: [string, RawResponse][] = []
    for (const key of [WRITER, READER]) {
      answers.push(['X-HTTP-Method-Override: TRACE', await send('POST', '/api/v1/campaign/get', key, { 'x-http-method-override': 'TRACE' })])
      const form = await send('POST', '/api/v1/campaign/get', key, { 'content-type': 'application/x-www-form-urlencoded' }, 'userId=101&_method=TRACE')
      expect(form.status).toBe(400)
      expect(JSON.parse(form.body)).toMatchObject({ code: 'GW_BAD_REQUEST' })
      answers.push(['_method=TRACE', form])
    }
    expect(leaks(answers)).toEqual([])
    expect(reflecting.requests.map((r) => [r.method, r.headers['x-http-method-override']])).toEqual([
      ['POST', undefined],
      ['POST', undefined],
    ])
  })

  it('logged no platform token or key, at trace level', async () => {
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(gw.log.isLevelEnabled('trace')).toBe(true)
    expect(leakedSecrets(gw.logs.text(), [PLATFORM_TOKEN, WRITER, READER])).toEqual([])
  })
})

describe('HEAD of a report', () => {
  const sg = useAttackGateway()
  const fill = `/api/v1/report/campaigns/get?advertiserId=101&byDate=1&${REPORT_DATES}`
  // The answer's own headers, less those of the moment it was made (platform-usage: the miss's fill cost, a hit's none).
  const own = (headers: Headers) => Object.fromEntries([...headers].filter(([name]) => !['date', 'x-request-id', 'age', 'cache-status', 'platform-usage', 'keep-alive', 'connection'].includes(name)))

  it('is its GET without the body, cold or cached, on a kept-alive connection', async () => {
    const cold = await fetch(`${sg.url}${fill}`, { method: 'HEAD', headers: { 'x-api-key': KEYS.all } })
    expect(cold.status).toBe(200)
    expect(cold.headers.get('x-cache')).toBe('MISS')
    expect(await cold.text()).toBe('')
    const get = await fetch(`${sg.url}${fill}`, { headers: { 'x-api-key': KEYS.all } })
    expect(await get.text()).toContain('"data"')
    expect(get.headers.get('x-cache')).toBe('HIT')
    const head = await fetch(`${sg.url}${fill}`, { method: 'HEAD', headers: { 'x-api-key': KEYS.all } })
    expect(await head.text()).toBe('')
    // The same headers, content-length (of the gzipped body fetch asked for) included.
    expect(own(head.headers)).toEqual(own(get.headers))
    expect(head.headers.get('content-length')).toMatch(/^[1-9]\d*$/)
    expect(own(cold.headers)).toEqual({ ...own(get.headers), 'x-cache': 'MISS' })
    // The fill asked the platform for the report with GET: HEAD is the gateway's to answer.
    expect(sg.callerRequests().map((r) => r.method)).toEqual(['GET'])
    // A 304 to a HEAD naming the entry, as to its GET.
    const etag = get.headers.get('etag') as string
    const unchanged = await fetch(`${sg.url}${fill}`, { method: 'HEAD', headers: { 'x-api-key': KEYS.all, 'if-none-match': etag } })
    expect(unchanged.status).toBe(304)
  })

  it('preferring respond-async is its GET without the body too: 202, the job\'s location and preference-applied, a job read at that location, as a GET\'s', async () => {
    const cold = (day: number) => `/api/v1/report/campaigns/get?advertiserId=101&byDate=1&dateFrom=2026-02-${String(day).padStart(2, '0')}&dateTo=2026-02-20`
    const prefer = { 'x-api-key': KEYS.all, prefer: 'respond-async' }
    const get = await fetch(`${sg.url}${cold(1)}`, { headers: prefer })
    const head = await fetch(`${sg.url}${cold(2)}`, { method: 'HEAD', headers: prefer })
    expect(head.status).toBe(202)
    expect(await head.text()).toBe('')
    const location = head.headers.get('location') as string
    expect(location).toMatch(/^\/api\/v1\/jobs\/[\w-]+$/)
    const jobless = (headers: Headers) => Object.fromEntries(Object.entries(own(headers)).filter(([name]) => !['location', 'content-length'].includes(name)))
    expect(jobless(head.headers)).toEqual(jobless(get.headers))
    // The length of the job's status it would have sent (its own job's: not the GET's).
    expect(head.headers.get('content-length')).toMatch(/^[1-9]\d*$/)
    // The job is there, as a GET's would be; its status and result are read at its location.
    const status = async () => (await (await fetch(`${sg.url}${location}`, { headers: { 'x-api-key': KEYS.all } })).json()) as { id: string; state: string; result: string | null }
    await waitFor('the HEAD\'s job done', async () => (await status()).state === 'done', testTimeLeft(), 20)
    const result = await fetch(`${sg.url}${(await status()).result}`, { headers: { 'x-api-key': KEYS.all } })
    expect(result.status).toBe(200)
    expect(await result.text()).toContain('"data"')
    // A HEAD the copy now answers is its GET's 200, no job.
    const cached = await fetch(`${sg.url}${cold(2)}`, { method: 'HEAD', headers: prefer })
    expect(cached.status).toBe(200)
    expect(cached.headers.get('location')).toBeNull()
  })

  it('sends no body over a raw socket either', async () => {
    const get = await rawRequest(sg.port, rawHttp('GET', fill))
    const head = await rawRequest(sg.port, rawHttp('HEAD', fill))
    expect(head.status).toBe(200)
    expect(head.text.endsWith('\r\n\r\n')).toBe(true)
    expect(head.body).toBe('')
    expect(head.headers['content-length']).toBe(get.headers['content-length'])
    expect(head.headers.etag).toBe(get.headers.etag)
  })

  itLoggedNoSecret(sg)
})
