import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { call, useAttackGateway } from './attack-gateway.js'

// A JSON body is parsed, checked and written again for the platform (request-body.ts). A
// PHP platform reads a number as it is written: `1.0` a float, `1` an int, an integer up to
// 2^63 - 1 exactly, a longer one a float, `1e400` INF. Written again from a double, the
// numbers said something else (found by a black-box pass, session 132: an id of
// 9007199254740993 reached the platform as 9007199254740992, 1e400 as null).

const sg = useAttackGateway()
const JSON_TYPE = { 'content-type': 'application/json' }

describe("a JSON body's numbers reach the platform as the caller wrote them", () => {
  it('passes on every number as written: floats, exponents, -0, integers past 2^63, past a double', async () => {
    const body = '{"userId":101,"bid":1e400,"price":0.30000000000000004441,"n":-0,"f":1.0,"e":1.02E5,"ref":12345678901234567890}'
    const res = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.writer, body, headers: JSON_TYPE })
    expect(res.status).toBe(200)
    expect(sg.callerRequests().map((r) => r.body)).toEqual([body])
  })

  // The checks read a double; between ±2^53 and a 64-bit int the platform would read another
  // integer than the one checked: refused, naming the way to send it.
  it('refuses an integer that PHP holds exactly and a double does not, before the platform', async () => {
    const res = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.writer, body: '{"userId":101,"ref":9007199254740993}', headers: JSON_TYPE })
    expect(res.status).toBe(400)
    expect(res.json).toMatchObject({ code: 'GW_BAD_REQUEST', message: expect.stringContaining('the integer 9007199254740993 is past ±2^53') })
    expect(sg.callerRequests()).toEqual([])
  })
})
