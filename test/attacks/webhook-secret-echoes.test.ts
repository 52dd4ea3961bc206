import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH } from '../helpers/build-gateway.js'
import { SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { call, itLoggedNoSecret, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// A refusal names what the caller sent, within 64 characters (observe/caller-text.ts). A
// team's webhook secret is scrubbed from what the gateway writes, but it is no secret of
// the gateway's: a request holding another team's is not refused, so a refusal may echo it.
// The schema takes one of any length from 30 characters: cut to its first 64 before the
// scrub looked for it whole, a longer one was answered in part to whoever named it.

const LONG_SECRET = `whsec_${'Zq7Yx2Wv'.repeat(12)}`
const yaml = `jobs:\n  webhookHosts: [localhost]\n${SANDBOX_TEAMS_YAML.replace('    write: true\n', `    write: true\n    webhook: { url: "http://localhost:9/hook", secret: "${LONG_SECRET}" }\n`)}`

const sg = useAttackGateway({ yaml })

describe('another team\'s webhook secret, longer than a refusal writes of a caller\'s text, in what a refusal names', () => {
  it('as a parameter a job call does not take: 400 naming it [REDACTED], no head of it shown', async () => {
    const res = await call(sg, 'GET', `/api/v1/jobs/abc?${LONG_SECRET}=1`, { key: KEYS.growth })
    expect(res.status).toBe(400)
    expect(res.json).toMatchObject({ code: 'GW_BAD_REQUEST', message: '[REDACTED]: not a parameter of this call (it takes wait)' })
    expect(JSON.stringify(res.json)).not.toContain(LONG_SECRET.slice(6, 22))
  })

  it('as a report parameter\'s value: 400 naming it [REDACTED], no head of it shown', async () => {
    const res = await call(sg, 'GET', `${REPORT_PATH}?advertiserId=${LONG_SECRET}&${REPORT_DATES}`, { key: KEYS.growth })
    expect(res.status).toBe(400)
    expect(res.json).toMatchObject({ code: 'GW_BAD_QUERY', message: 'advertiserId: must be a positive integer ([REDACTED])' })
    expect(JSON.stringify(res.json)).not.toContain(LONG_SECRET.slice(6, 22))
  })
})

itLoggedNoSecret(sg, [LONG_SECRET])
