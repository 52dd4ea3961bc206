import { beforeAll, describe, expect, it } from 'vitest'
import { useSandboxGateway } from '../helpers/fixtures.js'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { ensureWarmBuilt, reportCalls as reports, warm } from '../helpers/warm-cli.js'

// The built warm CLI's progress lines in a job's log, 5 s apart, while a slow platform
// (2.5 to 5.5 s a report) keeps the run going: seconds of real time each, so here rather
// than in `npm test`, which checks the lines on a fake clock (test/unit/warm-progress.test.ts)
// and the CLI's runs (test/integration/cache-warm.test.ts).

beforeAll(ensureWarmBuilt, 130_000)
const env = useSandboxGateway()

describe('npm run warm, its output no terminal', () => {
  it('--jobs: its progress lines say how many jobs are open', async () => {
    // Longer than the 5 s between progress lines: one comes while the jobs run.
    env.sandbox.setLatency(5500)
    const run = await warm(['--advertisers', '101,102,103', '--from', '2026-08-01', '--to', '2026-08-31', '--url', env.url, '--concurrency', '1', '--jobs'], { WARM_API_KEY: KEYS.all })
    env.sandbox.setLatency(0)
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const lines = run.stdout.trim().split('\n')
    expect(lines[0]).toMatch(/^warm: 3 reports .*, 1 at a time, as jobs$/)
    // Asked at once, then waited for: the progress says how many jobs are open.
    expect(lines.slice(1, -1).some((line) => /; [1-3] jobs queued or running$/.test(line))).toBe(true)
    expect(lines.at(-1)).toMatch(/: 3 warmed, 0 already fresh, 0 stale, 0 not cacheable, 0 failed$/)
    expect(reports(env)).toHaveLength(3)
  })

  it('writes a progress line every 5 seconds when its output is no terminal', async () => {
    env.sandbox.setLatency(2500)
    const run = await warm(['--advertisers', '101,102,103', '--from', '2026-09-01', '--to', '2026-09-02', '--url', env.url, '--concurrency', '1'], { WARM_API_KEY: KEYS.all })
    env.sandbox.setLatency(0)
    expect(run.code).toBe(0)
    const lines = run.stdout.trim().split('\n')
    expect(lines[0]).toMatch(/^warm: 3 reports/)
    expect(lines.slice(1, -1).length).toBeGreaterThanOrEqual(1)
    for (const line of lines.slice(1, -1)) expect(line).toMatch(/^warm: [0-3]\/3: \d warmed, \d already fresh, 0 stale, 0 not cacheable, 0 failed$/)
    expect(lines.at(-1)).toMatch(/: 3 warmed, 0 already fresh/)
  })
})
