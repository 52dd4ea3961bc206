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
// Another team's, of the length `echo whsec_$(openssl rand -base64 24)` makes: whole in any echo.
const SECRET = 'whsec_Kd8rTq2LmW5vXc9NbH3jPa7sFy1G'
const teams = SANDBOX_TEAMS_YAML.replace('    write: true\n', `    write: true\n    webhook: { url: "http://localhost:9/hook", secret: "${LONG_SECRET}" }\n`).replace(
  '    refresh: true\n',
  `    refresh: true\n    webhook: { url: "http://localhost:9/hook", secret: "${SECRET}" }\n`,
)
if (!teams.includes(SECRET) || !teams.includes(LONG_SECRET)) throw new Error('webhook-secret-echoes: the teams hold no webhook secret')
const yaml = `jobs:\n  webhookHosts: [localhost]\n${teams}`

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

/** `text` with its last letter of `secret`'s other case: the same form and length, and no team's secret. */
function decoyOf(secret: string): string {
  const last = secret.at(-1) as string
  return `${secret.slice(0, -1)}${last === last.toUpperCase() ? last.toLowerCase() : last.toUpperCase()}`
}

// What a caller sends, with `guess` in a place a refusal names it.
const ECHOES: [string, (guess: string) => string][] = [
  ['a job call\'s parameter it does not take', (guess) => `/api/v1/jobs/abc?${guess}=1`],
  ['a report parameter\'s value', (guess) => `${REPORT_PATH}?advertiserId=101&dateFrom=${guess}&dateTo=2026-01-07`],
  ['a parameter name the platform would not read plainly', (guess) => `${REPORT_PATH}?advertiserId=101&${REPORT_DATES}&x${guess}!=1`],
]

describe('a guess at another team\'s webhook secret, in what a refusal names', () => {
  const bare = SECRET.slice('whsec_'.length)
  it.each(ECHOES)('as %s: the secret and a text of its form that is none are answered alike', async (_, target) => {
    for (const secret of [SECRET, bare]) {
      const hit = await call(sg, 'GET', target(secret), { key: KEYS.growth })
      const miss = await call(sg, 'GET', target(decoyOf(secret)), { key: KEYS.growth })
      expect(hit.status).toBe(400)
      expect(miss.status).toBe(400)
      // Alike but for the text sent: each as it was sent, or each [REDACTED].
      expect(JSON.stringify(hit.json).replaceAll(secret, '<sent>')).toBe(JSON.stringify(miss.json).replaceAll(decoyOf(secret), '<sent>'))
    }
  })
})

itLoggedNoSecret(sg, [LONG_SECRET, SECRET])
