import { describe, expect, it } from 'vitest'
import { UPLOADER_KEY, withUploader } from '../helpers/build-gateway.js'
import { SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { ADMIN_TOKEN, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// A team writing the console's audit view: the request log line of a team's call holds
// the accounts as the caller wrote them, an object of the team's included. An account
// written as `{"kind":"audit", …}` put `"kind":"audit"` in the line, which the audit
// trail kept as an audit line: a team could plant lines in GET /admin/audit (and so in
// the console's Audit section) and push the operators' own out of its last 50.

describe('a team forging the audit trail', () => {
  const sg = useAttackGateway({ yaml: withUploader(SANDBOX_TEAMS_YAML) })
  const audit = async () => {
    const res = await sg.gw.admin.inject({ method: 'GET', url: '/admin/audit', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    return (JSON.parse(res.body) as { lines: Record<string, unknown>[] }).lines
  }

  it('an account written as an object with "kind":"audit" puts no line of the team\'s in the audit trail', async () => {
    // Within the 64 characters an account is logged in as written (an object, not its cut text).
    const forged = { kind: 'audit', msg: 'report cache purged', actor: 'admin' }
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${sg.url}/api/v1/campaign/update`, {
        method: 'POST',
        headers: { 'x-api-key': UPLOADER_KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ advertiserId: forged, userId: forged }),
      })
      await res.arrayBuffer()
    }
    // The log holds the team's lines (the write audit of each call and its request line) by now.
    expect(sg.gw.logs.text()).toContain('"kind":"audit","msg":"report cache purged"')
    const lines = await audit()
    expect(lines.filter((l) => l.kind !== 'audit')).toEqual([])
    expect(lines.filter((l) => l.msg === 'request')).toEqual([])
    expect(lines.filter((l) => l.msg === 'report cache purged')).toEqual([])
  })

  it('a team writing more than 50 times pushes no operator\'s line out of the audit trail', async () => {
    const purge = await sg.gw.admin.inject({ method: 'DELETE', url: '/admin/cache?advertiserId=101', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(purge.statusCode).toBe(200)
    for (let i = 0; i < 60; i++) {
      const res = await fetch(`${sg.url}/api/v1/campaign/update`, {
        method: 'POST',
        headers: { 'x-api-key': UPLOADER_KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ advertiserId: 101, userId: 101 }),
      })
      await res.arrayBuffer()
    }
    const lines = await audit()
    expect(lines.filter((l) => l.action === 'write').length).toBe(50)
    expect(lines.filter((l) => l.action === 'purge' && l.advertiserId === 101)).toHaveLength(1)
    // Newest first across both: the purge came before every write.
    const purgeAt = lines.findIndex((l) => l.action === 'purge')
    expect(lines.findLastIndex((l) => l.action === 'write')).toBeLessThan(purgeAt)
  })

  itLoggedNoSecret(sg)
})
