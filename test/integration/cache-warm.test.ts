import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from 'node:http'
import { createServer } from 'node:net'
import { beforeAll, describe, expect, it } from 'vitest'
import { useSandboxGateway } from '../helpers/fixtures.js'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { ensureWarmBuilt, reportCalls as reports, warm } from '../helpers/warm-cli.js'

// `npm run warm` as the CronJob runs it: the built CLI in a child process, against a
// gateway and the platform sandbox on loopback. Its progress lines, 5 s apart:
// test/unit/warm-progress.test.ts (fake clock) and test/slow/warm-progress.test.ts (the CLI).

beforeAll(ensureWarmBuilt, 130_000)
const env = useSandboxGateway()

describe('npm run warm', () => {
  const range = ['--from', '2026-11-01', '--to', '2026-11-21']

  it('warms each advertiser, then finds them fresh; callers then hit the warmed entries', async () => {
    const first = await warm(['--advertisers', '101,102', ...range, '--by-date', '--by-campaign', '--url', env.url])
    expect(first.stderr).toBe('')
    expect(first.code).toBe(0)
    expect(first.stdout).toContain(`warm: 2 reports (advertisers 101,102; splits campaigns; 2026-11-01 to 2026-11-21) through ${env.url}, 4 at a time`)
    expect(first.stdout).toMatch(/warm: done in [\d.]+ s: 2 warmed, 0 already fresh, 0 stale, 0 not cacheable, 0 failed\n$/)
    expect(reports(env)).toHaveLength(2)
    // The key reaches neither the output nor the platform.
    expect(first.stdout + first.stderr).not.toContain(KEYS.growth)

    const again = await warm(['--advertisers', '101,102', ...range, '--by-date', '--by-campaign'], { WARM_URL: env.url })
    expect(again.code).toBe(0)
    expect(again.stdout).toContain('0 warmed, 2 already fresh, 0 stale, 0 not cacheable, 0 failed')
    expect(reports(env)).toHaveLength(2)

    const caller = await fetch(`${env.url}/api/v1/report/campaigns/get?dateTo=2026-11-21&byCampaign=true&dateFrom=2026-11-01&byDate=1&advertiserId=102`, { headers: { 'x-api-key': KEYS.all } })
    await caller.arrayBuffer()
    expect(caller.headers.get('x-cache')).toBe('HIT')
    expect(reports(env)).toHaveLength(2)
  })

  it('--jobs: asks each report as a job and waits for the jobs; the fresh ones are answered at once', async () => {
    env.sandbox.clearRequests()
    const jobRange = ['--from', '2026-08-01', '--to', '2026-08-31']
    const run = await warm(['--advertisers', '101,102,103', ...jobRange, '--url', env.url, '--concurrency', '1', '--jobs'], { WARM_API_KEY: KEYS.all })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const lines = run.stdout.trim().split('\n')
    expect(lines[0]).toMatch(/^warm: 3 reports .*, 1 at a time, as jobs$/)
    expect(lines.at(-1)).toMatch(/: 3 warmed, 0 already fresh, 0 stale, 0 not cacheable, 0 failed$/)
    expect(reports(env)).toHaveLength(3)
    // Each was a job: its calls carry the job's request id.
    for (const r of reports(env)) expect(String(r.headers['x-request-id'])).toMatch(/^job-/)

    const again = await warm(['--advertisers', '101,102,103', ...jobRange, '--url', env.url, '--jobs'], { WARM_API_KEY: KEYS.all })
    expect(again.code).toBe(0)
    expect(again.stdout).toContain('0 warmed, 3 already fresh')
    expect(reports(env)).toHaveLength(3)
  })

  it('exits 1 and names each report that failed: an advertiser the team may not read, a failing platform', async () => {
    env.sandbox.clearRequests()
    env.sandbox.setFailure({ kind: 'status', status: 500 })
    const run = await warm(['--advertisers', '101,999', '--from', '2026-10-01', '--to', '2026-10-02', '--splits', 'campaigns', '--url', env.url, '--concurrency', '1'])
    env.sandbox.setFailure({ kind: 'none' })
    expect(run.code).toBe(1)
    expect(run.stdout).toContain('0 warmed, 0 already fresh, 0 stale, 0 not cacheable, 2 failed')
    const lines = run.stderr.trim().split('\n').sort()
    expect(lines).toEqual([
      expect.stringMatching(/^warm: failed: GET \/api\/v1\/report\/campaigns\/get\?advertiserId=101&dateFrom=2026-10-01&dateTo=2026-10-02: 502 GW_UPSTREAM: /),
      expect.stringMatching(/^warm: failed: GET \/api\/v1\/report\/campaigns\/get\?advertiserId=999&dateFrom=2026-10-01&dateTo=2026-10-02: 403 GW_FORBIDDEN: /),
    ])
  })

  it('refuses a redirect to another origin: the team key never leaves the gateway\'s origin', async () => {
    const seen: IncomingHttpHeaders[] = []
    const elsewhere = await listenHttp((req, res) => {
      seen.push(req.headers)
      res.end('{}')
    })
    // The same origin may move a path (followed); another origin is refused before any call.
    const gateway = await listenHttp((req, res) => {
      const target = req.url?.startsWith('/moved') ? `${origin(elsewhere)}${req.url}` : `/moved${req.url ?? ''}`
      res.writeHead(302, { location: target }).end()
    })
    try {
      const run = await warm(['--advertisers', '101,102', ...range, '--url', origin(gateway), '--concurrency', '1'])
      expect(run.code).toBe(1)
      expect(run.stderr).toBe(`warm: ${origin(gateway)} redirected to another origin (${origin(elsewhere)}); refused, so that the team key is sent nowhere else\n`)
      expect(seen).toEqual([])
      expect(run.stdout + run.stderr).not.toContain(KEYS.growth)
    } finally {
      await Promise.all([gateway, elsewhere].map((s) => new Promise((resolve) => s.close(resolve))))
    }
  })

  it('says a --url written https:// for the gateway, which speaks plain HTTP, is that', async () => {
    const run = await warm(['--advertisers', '101', ...range, '--url', env.url.replace('http://', 'https://')])
    expect(run.code).toBe(1)
    expect(run.stderr).toContain(": ERR_SSL_WRONG_VERSION_NUMBER (TLS failed: --url's address answers in plain HTTP, not TLS)\n")
  })

  it('exits 1 when the gateway cannot be reached, and 2 for a usage error', async () => {
    const closed = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number }
        server.close(() => resolve(port))
      })
    })
    const refused = await warm(['--advertisers', '101', ...range, '--url', `http://127.0.0.1:${closed}`])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('ECONNREFUSED')
    expect(refused.stdout).toContain('1 failed')

    const usage = await warm(['--advertisers', '101', ...range, '--url', env.url], { WARM_API_KEY: '' })
    expect(usage.code).toBe(2)
    expect(usage.stderr).toMatch(/^warm: WARM_API_KEY: the team key/)
  })
})

function listenHttp(handler: Parameters<typeof createHttpServer>[1]): Promise<Server> {
  const server = createHttpServer(handler)
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)))
}

function origin(server: Server): string {
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`
}
