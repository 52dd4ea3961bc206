import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH } from '../helpers/build-gateway.js'
import { SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { call, itLoggedNoSecret, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// A team's webhook secret is the team's own: the team makes it (docs/configuration.md,
// `echo whsec_$(openssl rand -base64 24)`) and its receiver holds it. The schema takes any
// text of the base64 alphabet of 24 characters or more after `whsec_`, `/` included, so a
// team may hand the operator one that spells a path every team calls:
// `whsec_/api/v1/report/campaigns/get`. Taken for a secret of the gateway's, it made every
// other team's call of that path a "guess" at it: 400, and the caller's team suspended for
// limits.secretSuspension (7 days), on every replica. A team's webhook secret is scrubbed
// from what the gateway writes; another team's request that holds its text is no guess at
// anything of the gateway's.

const ATTACKER_SECRET = `whsec_${REPORT_PATH}`
const yaml = `jobs:\n  webhookHosts: [localhost]\n${SANDBOX_TEAMS_YAML.replace('    write: true\n', `    write: true\n    webhook: { url: "http://localhost:9/hook", secret: "${ATTACKER_SECRET}" }\n`)}`

const sg = useAttackGateway({ yaml })

describe('a team\'s webhook secret that spells what other teams send', () => {
  it('suspends no other team: their report reads are answered', async () => {
    for (const key of [KEYS.growth, KEYS.all]) {
      const res = await call(sg, 'GET', `${REPORT_PATH}?advertiserId=101&${REPORT_DATES}`, { key })
      expect(res.json.code).toBeUndefined()
      expect(res.status).toBe(200)
    }
    const again = await call(sg, 'GET', `${REPORT_PATH}?advertiserId=102&${REPORT_DATES}`, { key: KEYS.growth })
    expect(again.status).toBe(200)
  })
})

itLoggedNoSecret(sg)
