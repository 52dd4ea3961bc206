import { describe, expect, it } from 'vitest'
import { UPLOADER_KEY, withUploader } from '../helpers/build-gateway.js'
import { KEYS, TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { call, direct, itLoggedNoSecret, newCampaign, useAttackGateway } from './attack-gateway.js'

// Creative sets of another advertiser. `banner/create` names the sets its campaign shows
// (`creativeSetIds`); a set id does not say whose it is, and the platform (the sandbox
// models it) takes any set the token reads on a campaign of any of its children. The
// writer team is limited to 101; 1020011 is a set of its sibling 102, 1010011 one of its own.

const FOREIGN_SET = 1020011
const OWN_SET = 1010011
const CREATE = '/api/v1/campaign/banner/create'

/** As the gateway is configured by default: `ownership.creativeSets.check: refuse`. */
const refusing = useAttackGateway({ yaml: withUploader(TEAMS_YAML) })
/** Told where the sandbox lists an account's creative sets (the sandbox-gateway default). */
const looking = useAttackGateway()

const created = (sg: typeof refusing) => sg.callerRequests().filter((r) => r.path === CREATE)

describe('the platform takes any set the token reads (the sandbox models it)', () => {
  it('a campaign of 101 shows a set of 102, created with the parent\'s token', async () => {
    const res = await direct(refusing, 'POST', CREATE, { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...newCampaign(101), creativeSetIds: [FOREIGN_SET] }) })
    expect(res.status).toBe(201)
    expect(res.json.data).toMatchObject({ userId: 101, creativeSetIds: [FOREIGN_SET] })
  })
})

describe.each([
  ['by default (refuse)', refusing],
  ['with a lookup', looking],
])('a scoped writer naming a sibling\'s creative set, %s', (_name, sg) => {
  const spellings: [string, () => Promise<{ status: number; json: Record<string, unknown> }>][] = [
    ['in the JSON body', () => call(sg, 'POST', CREATE, { key: KEYS.writer, json: { ...newCampaign(101), creativeSetIds: [OWN_SET, FOREIGN_SET] } })],
    ['in the query beside a JSON body without one', () => {
      const { creativeSetIds: _sets, ...rest } = newCampaign(101)
      return call(sg, 'POST', `${CREATE}?creativeSetIds[]=${FOREIGN_SET}`, { key: KEYS.writer, json: rest })
    }],
    ['as a form field', () => call(sg, 'POST', CREATE, {
      key: KEYS.writer,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `userId=101&name=x&adDomain=example.com&clickUrl=https%3A%2F%2Fexample.com%2F&dates[from]=2026-01-01&dates[to]=2026-01-31&country=KE&bid=1&budget[daily]=10&budget[total]=100&creativeSetIds[0]=${FOREIGN_SET}`,
    })],
    ['as a string', () => call(sg, 'POST', CREATE, { key: KEYS.writer, json: { ...newCampaign(101), creativeSetIds: [String(FOREIGN_SET)] } })],
  ]
  it.each(spellings)('%s: 403 GW_FORBIDDEN, and nothing reaches the platform', async (_spelling, send) => {
    const res = await send()
    expect([res.status, res.json.code]).toEqual([403, 'GW_FORBIDDEN'])
    expect(String(res.json.message)).toContain('creative set')
    expect(created(sg)).toEqual([])
  })
})

describe('own creative sets', () => {
  it('by default a scoped writer\'s create naming sets is refused, the message naming the setting', async () => {
    const res = await call(refusing, 'POST', CREATE, { key: KEYS.writer, json: newCampaign(101) })
    expect([res.status, res.json.code]).toEqual([403, 'GW_FORBIDDEN'])
    expect(String(res.json.message)).toContain('ownership.creativeSets')
    expect(created(refusing)).toEqual([])
  })

  it('with a lookup, a scoped writer creates a campaign showing its own sets', async () => {
    const res = await call(looking, 'POST', CREATE, { key: KEYS.writer, json: { ...newCampaign(101), creativeSetIds: [OWN_SET, 1010021] } })
    expect(res.status).toBe(201)
    expect(created(looking)).toHaveLength(1)
  })

  it('an unrestricted writer names any set, and nothing is looked up', async () => {
    const res = await call(refusing, 'POST', CREATE, { key: UPLOADER_KEY, json: { ...newCampaign(101), creativeSetIds: [FOREIGN_SET] } })
    expect(res.status).toBe(201)
    expect(refusing.sandbox.requests.filter((r) => r.path !== CREATE)).toEqual([])
  })
})

itLoggedNoSecret(refusing)
itLoggedNoSecret(looking)
