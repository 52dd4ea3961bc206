import { beforeAll, describe, expect, it } from 'vitest'
import { KEYS, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'
import { rawHttp, rawRequest, SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'

// Contract, "Errors": a path under /api/v1/ spelled so that a server on the way could read it
// as another path is 404 GW_NOT_FOUND and reaches no platform; its message says what in the
// path is refused, as a caller's curl --path-as-is or a generated client that escapes a path
// parameter's slashes (`/api/v1/campaign%2Fget`) sends it. It was a bare `not found`, which
// reads as "the platform has no such route".

const sandbox = useSandbox()
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, SANDBOX_TEAMS_YAML), { listen: true })
beforeAll(() => sandbox.clearRequests())

const REST = 'write the platform\'s path as it is: each / and . plain, no segment empty, . or ..'

describe('a path under /api/v1/ a server on the way could read as another', () => {
  it.each([
    ['/api/v1/campaign%2Fget', '%2F (an encoded /)'],
    ['/api/v1/jobs%2F..', '%2F (an encoded /)'],
    ['/api/v1/report%2fcampaigns/get?advertiserId=101', '%2F (an encoded /)'],
    ['/api/v1/%2e%2e/oauth/token', '%2E (an encoded .)'],
    ['/api/v1/campaign%5Cget', '%5C (an encoded \\)'],
    ['/api/v1/campaign%252Fget', '%25 (an encoded %: an escape escaped again)'],
    ['/api/v1/campaign%00/get', '%00 (an encoded NUL)'],
    ['/api/v1/campaign//get', '// (an empty segment)'],
    ['/api/v1/campaign/../oauth/token', 'a .. segment'],
    ['/api/v1/./campaign/get', 'a . segment'],
  ])('%s is 404 saying what it holds, with a key or none, and reaches no platform', async (target, what) => {
    for (const key of [KEYS.all, null]) {
      const res = await rawRequest(gw.port as number, rawHttp('GET', target, { key }), 3000)
      expect(res.status).toBe(404)
      expect(JSON.parse(res.text.slice(res.text.indexOf('{')))).toEqual({
        statusCode: 404,
        code: 'GW_NOT_FOUND',
        error: 'Not Found',
        message: `not found: the path holds ${what}, which a server on the way could read as another path, and is sent nowhere; ${REST}`,
      })
      // What the caller wrote is not repeated.
      expect(res.text).not.toMatch(/campaign|oauth|jobs|report/)
    }
    expect(sandbox.requests).toHaveLength(0)
  })

  // Every method is that 404 there: OPTIONS and a 405 say so (allow: OPTIONS), as on a job path no job call serves.
  it.each(['/api/v1/campaign%2Fget', '/api/v1/report%2fcampaigns/get?advertiserId=101', '/api/v1/campaign//get', '/api/v1/campaign/../oauth/token'])('OPTIONS %s says allow: OPTIONS, and a 405 there', async (target) => {
    const options = await rawRequest(gw.port as number, rawHttp('OPTIONS', target), 3000)
    expect([options.status, options.headers.allow]).toEqual([204, 'OPTIONS'])
    const trace = await rawRequest(gw.port as number, rawHttp('TRACE', target), 3000)
    expect([trace.status, trace.headers.allow]).toEqual([405, 'OPTIONS'])
    // A path of a safe spelling still lists the methods forwarded.
    const plain = await rawRequest(gw.port as number, rawHttp('OPTIONS', '/api/v1/campaign/get'), 3000)
    expect(plain.headers.allow).toBe('GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS')
    expect(sandbox.requests).toHaveLength(0)
  })

  it('a path outside /api/v1/, the token request path among them, says what the listener serves, not what the path holds', async () => {
    for (const target of ['/api/v2/campaign/get', '/oauth/token']) {
      const res = await rawRequest(gw.port as number, rawHttp('GET', target), 3000)
      expect(res.status).toBe(404)
      expect(JSON.parse(res.text.slice(res.text.indexOf('{'))).message).toMatch(/^not found: this is the proxy listener \(/)
    }
    expect(sandbox.requests).toHaveLength(0)
  })
})
