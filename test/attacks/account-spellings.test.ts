import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { call, itLoggedNoSecret, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// An account field in a spelling the platform does not document: `user_id`, `UserId`,
// `advertiser-id`, ... The platform reads `userId` and `advertiserId`; a controller that
// reads another spelling (Laravel's `$request->user_id`) would act on the account it names,
// which the gateway's scope check does not look at. The sandbox reads none of them: these
// tests assert the gateway's refusal. The writer team is limited to 101, growth to 101 and 102.

const sg = useAttackGateway()
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

describe('a scoped team\'s account field in another spelling is 400, naming the spelling the platform reads', () => {
  it.each([
    ['user_id in the JSON body', 'POST', '/api/v1/campaign/get', { json: { userId: 101, user_id: 102 } }, 'user_id', 'userId'],
    ['advertiser_id in the JSON body', 'POST', '/api/v1/campaign/get', { json: { userId: 101, advertiser_id: 102 } }, 'advertiser_id', 'advertiserId'],
    ['user_id instead of userId', 'POST', '/api/v1/campaign/get', { json: { user_id: 102 } }, 'user_id', 'userId'],
    ['UserId nested in the JSON body', 'POST', '/api/v1/campaign/get', { json: { userId: 101, filter: { UserId: 102 } } }, 'UserId', 'userId'],
    ['userid in an array of the JSON body', 'POST', '/api/v1/campaign/get', { json: { userId: 101, items: [{ userid: 102 }] } }, 'userid', 'userId'],
    ['ADVERTISERID as a JSON array name', 'POST', '/api/v1/campaign/get', { json: { userId: 101, 'ADVERTISERID[0]': 102 } }, 'ADVERTISERID[0]', 'advertiserId'],
    ['advertiser-id in a form', 'POST', '/api/v1/campaign/get', { body: 'userId=101&advertiser-id=102', headers: FORM }, 'advertiser-id', 'advertiserId'],
    ['user_id nested in a form', 'POST', '/api/v1/campaign/get', { body: 'userId=101&filter[user_id]=102', headers: FORM }, 'filter[user_id]', 'userId'],
    // PHP stores `user.id` as `user_id`.
    ['user.id in a form', 'POST', '/api/v1/campaign/get', { body: 'userId=101&user.id=102', headers: FORM }, 'user.id', 'userId'],
    ['user_id in the query beside a JSON body', 'POST', '/api/v1/campaign/get?user_id=102', { json: { userId: 101 } }, 'user_id', 'userId'],
    ['ADVERTISERID in a report\'s query', 'GET', `/api/v1/report/campaigns/get?advertiserId=101&ADVERTISERID=102&${REPORT_DATES}`, {}, 'ADVERTISERID', 'advertiserId'],
    ['user_id in a delete\'s query', 'DELETE', '/api/v1/campaign/banner/delete/101001?userId=101&user_id=102', {}, 'user_id', 'userId'],
    // PHP reads a `[` no `]` follows as `_`: `user[id` is `user_id`, `advertiser[id` is `advertiser_id`.
    ['user[id in the query beside a JSON body', 'POST', '/api/v1/campaign/get?user[id=102', { json: { userId: 101 } }, 'user[id', 'userId'],
    ['user[id in a form', 'POST', '/api/v1/campaign/get', { body: 'userId=101&user[id=102', headers: FORM }, 'user[id', 'userId'],
    ['advertiser[id in a report\'s query', 'GET', `/api/v1/report/campaigns/get?advertiserId=101&advertiser[id=102&${REPORT_DATES}`, {}, 'advertiser[id', 'advertiserId'],
    ['advertiser.id[ in a report\'s query', 'GET', `/api/v1/report/campaigns/get?advertiserId=101&advertiser.id[=102&${REPORT_DATES}`, {}, 'advertiser.id[', 'advertiserId'],
  ])('%s', async (_name, method, target, opts, field, reads) => {
    const res = await call(sg, method, target, { key: KEYS.writer, ...opts })
    expect(res.status).toBe(400)
    expect(res.json.code).toBe('GW_BAD_REQUEST')
    expect(res.json.message).toContain(`${field}: the platform reads the account from ${reads}; send it so`)
    expect(sg.callerRequests()).toEqual([])
  })

  it('a report asked as a job is refused the same way', async () => {
    const res = await call(sg, 'GET', `/api/v1/report/campaigns/get?advertiserId=101&user_id=102&${REPORT_DATES}`, { key: KEYS.growth, headers: { prefer: 'respond-async' } })
    expect(res.status).toBe(400)
    expect(res.json.message).toContain('user_id: the platform reads the account from userId; send it so')
    expect(sg.callerRequests()).toEqual([])
  })
})

describe('an account under a bracketed key of the query or a form is checked, as one nested in JSON is', () => {
  // PHP reads `filter[userId]=102` as the JSON body `{"filter":{"userId":102}}`, whose account is checked.
  it.each([
    ['in a form', '/api/v1/campaign/get', { body: 'userId=101&filter[userId]=102', headers: FORM }],
    ['in the query', '/api/v1/campaign/get?filter[advertiserId]=102', { json: { userId: 101 } }],
  ])('%s: another\'s account is 403', async (_name, target, opts) => {
    const res = await call(sg, 'POST', target, { key: KEYS.writer, ...opts })
    expect(res.status).toBe(403)
    expect(sg.callerRequests()).toEqual([])
  })
})

describe('unchanged', () => {
  it('a team of every account sends other spellings on as they come', async () => {
    const res = await call(sg, 'POST', '/api/v1/campaign/get?advertiser_id=102', { key: KEYS.all, json: { userId: 101, user_id: 102, filter: { UserId: 102 } } })
    expect(res.status).toBe(200)
    const [list] = sg.callerRequests()
    expect(list?.query).toContain('advertiser_id=102')
    expect(list?.body).toBe('{"userId":101,"user_id":102,"filter":{"UserId":102}}')
  })

  it('a scoped team\'s userId: its own passes, another\'s is 403, a nested one places nothing', async () => {
    expect((await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.writer, json: { userId: 101 } })).status).toBe(200)
    expect(sg.callerRequests().map((r) => r.body)).toEqual(['{"userId":101}'])
    sg.sandbox.clearRequests()
    expect((await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.writer, json: { userId: 102 } })).status).toBe(403)
    expect((await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.writer, json: { filter: { userId: 101 } } })).status).toBe(403)
    expect(sg.callerRequests()).toEqual([])
  })

  it('a field that only contains an account name is not one', async () => {
    const res = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.writer, json: { userId: 101, parentUserIdHint: 1 } })
    expect(res.status).toBe(200)
  })
})

itLoggedNoSecret(sg)
