/**
 * What a real gateway serves at /metrics, after traffic, passes
 * `promtool check metrics` with no finding (exit 0). promtool comes from Debian's
 * `prometheus` package (.ci/run installs it); without it this is skipped and the run's
 * last line says so (helpers/missing-tools.ts), which with CI=true fails the run.
 */
import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/build-gateway.js'
import { useSandboxGateway } from '../helpers/fixtures.js'
import { needTool, TOOLS } from '../helpers/missing-tools.js'

const available = needTool(TOOLS.promtool, spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0, 'the /metrics lint')

describe.skipIf(!available)('promtool check metrics on /metrics', () => {
  const env = useSandboxGateway()

  it('finds nothing to say about the series a gateway with traffic exposes', async () => {
    const report = `${env.url}/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-10-01&dateTo=2026-10-02`
    const statuses = [
      (await fetch(report, { headers: { 'x-api-key': KEYS.all } })).status,
      (await fetch(report, { headers: { 'x-api-key': KEYS.all } })).status,
      (await fetch(report, { headers: { 'x-api-key': 'rgw_not_a_key_of_any_team_000000000000000000' } })).status,
      (await fetch(`${env.url}/nope`, { headers: { 'x-api-key': KEYS.all } })).status,
    ]
    expect(statuses).toEqual([200, 200, 401, 404])
    const metrics = await env.gw.admin.inject({ method: 'GET', url: '/metrics' })
    expect(metrics.statusCode).toBe(200)
    // The series that carried the traffic are there, so promtool saw labelled samples.
    expect(metrics.body).toMatch(/^gateway_requests_total\{/m)
    expect(metrics.body).toMatch(/^gateway_process_nodejs_active_handles\{/m)

    const check = spawnSync('promtool', ['check', 'metrics'], { input: metrics.body, encoding: 'utf8' })
    expect(`${check.stdout}${check.stderr}`.trim()).toBe('')
    expect(check.status).toBe(0)
  })
})
