import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { PRYING_KEY, PRYING_TEAMS_YAML } from '../helpers/build-gateway.js'
import { itLoggedNoSecret, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// Every answer carries an x-request-id; a request without one of its own gets the
// gateway's. Were those ids a count, a team would read from two of its own ids how many
// requests every other team made on the replica in between, hits included. The prying
// team (101) watches; the growth team (101, 102) is the other.

const sg = useAttackGateway({ yaml: PRYING_TEAMS_YAML })
const READ = `/api/v1/report/campaigns/get?${REPORT_DATES}`

async function idOf(key: string, advertiser: number): Promise<string> {
  const res = await fetch(`${sg.url}${READ}&advertiserId=${advertiser}`, { headers: { 'x-api-key': key } })
  expect(res.status).toBe(200)
  await res.arrayBuffer()
  return res.headers.get('x-request-id') ?? ''
}

describe('the gateway\'s request ids', () => {
  it('tell a team nothing of the requests of the others: no shared part, no count between two of its own', async () => {
    const before = await idOf(PRYING_KEY, 101)
    const others = 5
    for (let i = 0; i < others; i++) await idOf(KEYS.growth, 102)
    const after = await idOf(PRYING_KEY, 101)
    for (const id of [before, after]) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    const tail = (id: string): number => Number.parseInt(id.slice(-12), 16)
    expect(tail(after) - tail(before)).not.toBe(others + 1)
    // Random in each of their 122 bits: two ids share no leading group (a per-process prefix gave 24 characters in common).
    expect(after.slice(0, 8)).not.toBe(before.slice(0, 8))
  })
})

itLoggedNoSecret(sg)
