import { describe, expect, it } from 'vitest'
import { claimDelivery, deliveryView, newDelivery, webhookAtRest } from '../../src/jobs/delivery.js'

// What a delivery keeps of its webhook's URL (docs/jobs.md, "What Redis holds"): its origin,
// never its user, path, query or fragment, which may carry the receiver's own token.

describe('a delivery\'s webhook URL at rest', () => {
  it('is the origin, without user, path, query or fragment', () => {
    expect(webhookAtRest('https://hooks.example.org/jobs?tok=s3cret#frag')).toBe('https://hooks.example.org')
    expect(webhookAtRest('https://u:p@hooks.example.org:8443/a/b')).toBe('https://hooks.example.org:8443')
    expect(webhookAtRest('https://hooks.slack.com/services/T0001/B0001/s3cret')).toBe('https://hooks.slack.com')
    expect(webhookAtRest('http://hooks.example.org')).toBe('http://hooks.example.org')
    expect(webhookAtRest('not a url')).toBe('')
  })

  it('is what a new delivery holds, and what one kept whole (an earlier build\'s) holds from its claim on; both listed so', () => {
    const fresh = newDelivery({ job: 'j', team: 'growth', jobState: 'done', url: 'https://hooks.example.org/jobs?tok=s3cret', body: '{}' }, 1000)
    expect(fresh.url).toBe('https://hooks.example.org')
    const earlier = { ...fresh, url: 'https://hooks.example.org/jobs?tok=s3cret' }
    expect(deliveryView(earlier).url).toBe('https://hooks.example.org')
    expect(claimDelivery(earlier, 'r1', 1000, 5000)).toMatchObject({ url: 'https://hooks.example.org', runner: 'r1', runs: 1 })
  })
})
