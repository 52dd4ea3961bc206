/**
 * The chart's cache-warm CronJob: its schedule, its pod, and what it runs (the built CLI,
 * run as the CronJob would run it). How the chart is rendered without helm: helm-chart.test.ts.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it, expect } from 'vitest'
import { mergeValues as merge, type RenderedChart, type Values } from '../helpers/render-chart.js'
import { needTool, TOOLS } from '../helpers/missing-tools.js'
import { install, type Deployment, one, gateway, services, type NetworkPolicy, type CronJob, selects } from '../helpers/chart-manifests.js'

describe('cache-warm CronJob (cacheWarm)', () => {
  const WARM = { enabled: true, advertisers: [101, 102], apiKeySecret: { name: 'warm-key' } }
  const render = (values: Values = {}) => install({ values: merge({ cacheWarm: WARM }, values) })
  const cronJob = (chart: RenderedChart) => one<CronJob>(chart, 'CronJob')
  const container = (chart: RenderedChart) => cronJob(chart).spec.jobTemplate.spec.template.spec.containers[0]!
  const env = (chart: RenderedChart) => new Map(container(chart).env.map((e) => [e.name, e]))
  const chart = render()

  it('runs once a day, never two runs at once, as the gateway image under the same security settings', () => {
    const job = cronJob(chart)
    expect(job.apiVersion).toBe('batch/v1')
    expect(job.metadata.name).toBe('rgw-report-gateway-cache-warm')
    expect(job.spec).toMatchObject({ schedule: '15 5 * * *', concurrencyPolicy: 'Forbid' })
    expect(job.spec.timeZone).toBeUndefined()
    const pod = job.spec.jobTemplate.spec.template.spec
    expect(pod.restartPolicy).toBe('Never')
    expect(pod.automountServiceAccountToken).toBe(false)
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true })
    expect(container(chart).image).toBe(gateway(chart).image)
    expect(container(chart).securityContext).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false })
  })

  it("is no pod of the gateway's Services, PDB or NetworkPolicy", () => {
    const labels = cronJob(chart).spec.jobTemplate.spec.template.metadata.labels
    expect(labels['app.kubernetes.io/component']).toBe('cache-warm')
    expect(selects(one<Deployment>(chart, 'Deployment').spec.selector.matchLabels, labels)).toBe(false)
    const np = one<NetworkPolicy>(render({ networkPolicy: { enabled: true } }), 'NetworkPolicy')
    expect(selects(np.spec.podSelector.matchLabels, labels)).toBe(false)
  })

  it('runs node dist/cli/warm.js with the flags from values, and the key from the Secret as WARM_API_KEY', () => {
    const c = container(chart)
    expect(c.command.slice(0, 2)).toEqual(['sh', '-c'])
    expect(c.command[2]).toContain('exec node dist/cli/warm.js --advertisers "$WARM_ADVERTISERS" --from "$from" --to "$to" --url "$WARM_URL" "$@"')
    expect(c.args).toEqual(['--by-date', '--by-campaign'])
    expect(env(chart).get('WARM_API_KEY')).toEqual({ name: 'WARM_API_KEY', valueFrom: { secretKeyRef: { name: 'warm-key', key: 'api-key' } } })
    expect(env(chart).get('WARM_ADVERTISERS')?.value).toBe('101,102')
    expect(env(chart).get('WARM_FROM')?.value).toBe('7 days ago')
    expect(env(chart).get('WARM_TO')?.value).toBe('yesterday')
    // The chart's own proxy Service by default.
    const { proxy } = services(chart)
    expect(env(chart).get('WARM_URL')?.value).toBe(`http://${proxy.metadata.name}.reports.svc:${proxy.spec.ports[0]!.port}`)
    // No secret value in the manifest.
    expect(JSON.stringify(cronJob(chart))).not.toMatch(/rgw_[A-Za-z0-9]/)
  })

  it('takes the schedule, time zone, dates, splits, flags, URL and Secret from values', () => {
    const other = render({
      cacheWarm: {
        schedule: '0 */6 * * *',
        timeZone: 'Europe/Berlin',
        from: '2026-01-01',
        to: 'today',
        splits: 'campaigns',
        byDate: false,
        byCampaign: false,
        extraArgs: ['--concurrency', '2'],
        url: 'http://report-gateway.reports.svc:8080',
        apiKeySecret: { name: 'warm', key: 'key' },
      },
    })
    expect(cronJob(other).spec).toMatchObject({ schedule: '0 */6 * * *', timeZone: 'Europe/Berlin' })
    expect(container(other).args).toEqual(['--splits', 'campaigns', '--concurrency', '2'])
    const e = env(other)
    expect(e.get('WARM_URL')?.value).toBe('http://report-gateway.reports.svc:8080')
    expect(e.get('WARM_FROM')?.value).toBe('2026-01-01')
    expect(e.get('TZ')?.value).toBe('Europe/Berlin')
    expect(e.get('WARM_API_KEY')?.valueFrom?.secretKeyRef).toEqual({ name: 'warm', key: 'key' })
  })

  const gnuDate = needTool(TOOLS.gnuDate, spawnSync('date', ['-d', '2026-01-01', '+%F'], { encoding: 'utf8' }).stdout.trim() === '2026-01-01', 'the cache-warm script test')
  it.skipIf(!gnuDate)('turns relative dates into days when it runs and passes every flag as its own argument (GNU date)', () => {
    // A stand-in `node` that prints its arguments shows what the script would run.
    const dir = mkdtempSync(join(tmpdir(), 'rgw-warm-'))
    try {
      writeFileSync(join(dir, 'node'), '#!/bin/sh\nprintf "%s\\n" "$@"\n', { mode: 0o755 })
      const c = container(render({ cacheWarm: { splits: 'campaigns' } }))
      const run = (from: string, to: string) =>
        spawnSync(c.command[0]!, [...c.command.slice(1), ...(c.args ?? [])], {
          encoding: 'utf8',
          env: { PATH: `${dir}:${process.env.PATH ?? ''}`, TZ: 'UTC', WARM_ADVERTISERS: '101,102', WARM_FROM: from, WARM_TO: to, WARM_URL: 'http://gw:8080', WARM_API_KEY: 'k' },
        })
      const fixed = run('2026-03-01', '2026-03-07')
      expect(fixed.status, fixed.stderr).toBe(0)
      expect(fixed.stdout.trim().split('\n')).toEqual([
        'dist/cli/warm.js',
        '--advertisers',
        '101,102',
        '--from',
        '2026-03-01',
        '--to',
        '2026-03-07',
        '--url',
        'http://gw:8080',
        '--splits',
        'campaigns',
        '--by-date',
        '--by-campaign',
      ])
      const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10)
      const relative = run('7 days ago', 'yesterday')
      expect(relative.status, relative.stderr).toBe(0)
      const lines = relative.stdout.trim().split('\n')
      expect([lines[4], lines[6]]).toEqual([day(-7), day(-1)])
      // An unreadable date stops the job before warm.js runs.
      const bad = run('someday', 'yesterday')
      expect(bad.status).not.toBe(0)
      expect(bad.stdout).toBe('')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('refuses to render without advertisers or the key Secret', () => {
    // The schema refuses these first; the template's own check names the value too.
    expect(() => install({ values: { cacheWarm: { enabled: true, apiKeySecret: { name: 'k' } } } })).toThrow(/schema/)
    expect(() => install({ values: { cacheWarm: { enabled: true, advertisers: [101] } } })).toThrow(/schema/)
  })
})
