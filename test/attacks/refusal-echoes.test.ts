import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { call, useAttackGateway } from './attack-gateway.js'

// A refusal's message names what the caller sent that was refused (an account, a creative
// set, a path), as the caller wrote it: a caller chooses how long that is. The message holds
// at most 64 characters of each such value and how many were left out, as the access line
// does, so that a 100 KB account is not echoed back whole to its sender (nor into whatever
// logs or stores the answers the sender's side keeps).

const sg = useAttackGateway()
const LONG = 'x'.repeat(100_000)
const CUT = `${'x'.repeat(64)}… (+${100_000 - 64} characters)`

describe('a refusal naming a value the caller sent', () => {
  it('of an account 100,000 characters long in a body: 403 naming its first 64 characters and how many were left out', async () => {
    const res = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, json: { userId: LONG } })
    expect(res.status).toBe(403)
    expect(res.json).toMatchObject({ code: 'GW_FORBIDDEN', message: `team growth may not use advertiser "${CUT}": a team's keys use only the advertisers its settings list; ask the gateway's operators to add it to team growth's advertisers` })
  })

  it('of a write path 5,000 characters long from a team that may not write: 403 naming its first 1,024 characters and how many were left out', async () => {
    const path = `/api/v1/campaign/banner/create/${'y'.repeat(5000)}`
    const res = await call(sg, 'POST', path, { key: KEYS.growth, json: {} })
    expect(res.status).toBe(403)
    expect(res.json.message).toBe(`team growth may not send writes (POST ${path.slice(0, 1024)}… (+${path.length - 1024} characters)): its settings let it read only; send writes with a key of a team that may write (write: true), which the gateway's operators give`)
  })

  it('of a report account 50,000 characters long in a POST body: 400, its first 64 characters', async () => {
    // limits.reportBody (64 KiB) takes a report body of 50,000 characters; the report's own check names the account first.
    const res = await call(sg, 'POST', '/api/v1/report/campaigns/get', { key: KEYS.growth, json: { advertiserId: 'x'.repeat(50_000), dateFrom: '2026-01-01', dateTo: '2026-01-07' } })
    expect(res.status).toBe(400)
    expect(JSON.stringify(res.json).length).toBeLessThan(1024)
  })

  it('of a short account: named as the caller wrote it', async () => {
    const res = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, json: { userId: 999 } })
    expect(res.status).toBe(403)
    expect(res.json.message).toBe("team growth may not use advertiser 999: a team's keys use only the advertisers its settings list; ask the gateway's operators to add it to team growth's advertisers")
  })
})
