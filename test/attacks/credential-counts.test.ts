import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { PRYING_KEY, PRYING_TEAMS_YAML } from '../helpers/build-gateway.js'
import { itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// Laravel's `throttle:api` middleware counts a token's calls and writes the count on every
// answer (`X-RateLimit-Limit`, `X-RateLimit-Remaining`). The teams share one token, so
// that count is every team's: a team that reads it sees, call by call, how often the
// others call the platform. The writer team (101) watches; the prying team (101) and the
// growth team (101, 102) are the others.

const sg = useAttackGateway({ yaml: PRYING_TEAMS_YAML })
const LIST = '/api/v1/campaign/get?per_page=5'

async function list(key: string, userId: number): Promise<Response> {
  return fetch(`${sg.url}${LIST}`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify({ userId }) })
}

/** The answer's headers that name a rate-limit count, whatever their spelling. */
function counts(res: Response): Record<string, string> {
  return Object.fromEntries([...res.headers].filter(([name]) => /^(x-)?rate-?limit/i.test(name)))
}

describe('the platform counts the token\'s calls on every answer (the sandbox models it)', () => {
  it('one count for every caller of a token, lowered by each call', async () => {
    const token = sg.sandbox.issueToken()
    const direct = async (): Promise<Response> => fetch(`${sg.sandbox.url}${LIST}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{"userId":101}' })
    const first = Number((await direct()).headers.get('x-ratelimit-remaining'))
    const second = await direct()
    expect(second.headers.get('x-ratelimit-limit')).toBe('60')
    expect(Number(second.headers.get('x-ratelimit-remaining'))).toBe(first - 1)
  })
})

describe('the platform\'s count of the shared token', () => {
  it('reaches no team: a proxied answer carries no x-ratelimit-* header, so no team reads how often the others call', async () => {
    const before = await list(KEYS.writer, 101)
    expect(before.status).toBe(200)
    for (const key of [PRYING_KEY, KEYS.growth, KEYS.growth]) expect((await list(key, 101)).status).toBe(200)
    const after = await list(KEYS.writer, 101)
    expect(after.status).toBe(200)
    expect(counts(before)).toEqual({})
    expect(counts(after)).toEqual({})
  })

  it('a team with a limit of its own reads its own count alone: ratelimit and ratelimit-policy are the gateway\'s', async () => {
    const res = await fetch(`${sg.url}${LIST}`, { method: 'POST', headers: { 'x-api-key': KEYS.limited, 'content-type': 'application/json' }, body: '{"userId":101}' })
    expect(res.status).toBe(200)
    expect(Object.keys(counts(res)).sort()).toEqual(['ratelimit', 'ratelimit-policy'])
    expect(res.headers.get('ratelimit-policy')).toBe('"default";q=3;w=60')
  })
})

itLoggedNoSecret(sg)
