import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH } from '../helpers/build-gateway.js'
import { SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { ADMIN_TOKEN, call, itLoggedNoSecret, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// A team's webhook secret is the team's own (webhook-secret-oracle.test.ts): the schema
// takes any text of the base64 alphabet of 24 characters or more after `whsec_`, `/`
// included. It is no secret of the gateway's any more, but the log still scrubbed it, its
// bare base64 too: a team that handed the operator `whsec_/api/v1/report/campaigns/get`
// (or `whsec_/api/v1/campaigns/create`, a write's path) had that path written `[REDACTED]`
// in every other team's request lines, their write audit lines and the operators' purge
// lines: one team blinding the log and the audit trail to what every team does.

const ATTACKER_SECRET = `whsec_${REPORT_PATH}`
const yaml = `jobs:\n  webhookHosts: [localhost]\n${SANDBOX_TEAMS_YAML.replace('    write: true\n', `    write: true\n    webhook: { url: "http://localhost:9/hook", secret: "${ATTACKER_SECRET}" }\n`)}`

const sg = useAttackGateway({ yaml })

describe('a team\'s webhook secret that spells what other teams send', () => {
  it('hides nothing of the other teams\' calls nor of the operators\' from the log', async () => {
    const res = await call(sg, 'GET', `${REPORT_PATH}?advertiserId=101&${REPORT_DATES}`, { key: KEYS.growth })
    expect(res.status).toBe(200)
    const purge = await sg.gw.admin.inject({ method: 'DELETE', url: `/admin/cache/entry?url=${encodeURIComponent(`${REPORT_PATH}?advertiserId=101&${REPORT_DATES}`)}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(purge.statusCode).toBe(200)
    const lines = sg.gw.logs.text().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>)
    const request = lines.find((l) => l.msg === 'request' && l.team === 'growth' && l.status === 200)
    expect(request?.path).toBe(REPORT_PATH)
    const purged = lines.find((l) => l.kind === 'audit' && l.action === 'purge')
    expect(String(purged?.report)).toMatch(new RegExp(`^${REPORT_PATH}\\?`))
  })

  it('is still scrubbed where a request spells it whole', async () => {
    const res = await call(sg, 'GET', `${REPORT_PATH}?advertiserId=101&${REPORT_DATES}&note=${ATTACKER_SECRET}`, { key: KEYS.growth })
    await res
    expect(sg.gw.logs.text()).not.toContain(ATTACKER_SECRET)
  })
})

itLoggedNoSecret(sg)
