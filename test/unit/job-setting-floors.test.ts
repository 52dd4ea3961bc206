import { describe, expect, it } from 'vitest'
import { configProblems as problems, loadConfigYaml as load } from '../helpers/load-config.js'

// docs/jobs.md, "Settings": durations of the job runner and the webhook deliverer that
// cannot work are refused at start (exit 78, one line each), as cache.lockTtl and
// platform.seatLease are: a lease of 1ms has an idle replica ask Redis about a thousand
// times a second (it looks once a lease), a keep of 0s expires every result as its job
// ends, a webhook timeout of 0s ends every attempt before its request.

describe('job settings that cannot work are refused at start', () => {
  it('refuses a jobs.lease under 1s, and takes 1s', () => {
    expect(problems('jobs: { lease: 1ms }')).toEqual(['jobs.lease: must be at least 1s (got 1ms)'])
    expect(problems('jobs: { lease: 999 }')).toEqual(['jobs.lease: must be at least 1s (got 999)'])
    expect(load('jobs: { lease: 1s }').jobs.leaseMs).toBe(1000)
  })

  it('refuses a jobs.keep under 1m, and takes 1m', () => {
    expect(problems('jobs: { keep: 0s }')).toEqual(['jobs.keep: must be at least 1m (got 0s)'])
    expect(load('jobs: { keep: 1m }').jobs.keepMs).toBe(60_000)
  })

  it('refuses a jobs.webhookTimeout under 100ms, and takes 100ms', () => {
    expect(problems('jobs: { webhookTimeout: 0s }')).toEqual(['jobs.webhookTimeout: must be at least 100ms (got 0s)'])
    expect(load('jobs: { webhookTimeout: 100ms }').webhooks.timeoutMs).toBe(100)
  })

  it('reports them together, one line each', () => {
    expect(problems('jobs: { lease: 0s, keep: 0s, webhookTimeout: 0s }')).toHaveLength(3)
  })
})
