import { request } from 'node:http'
import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/build-gateway.js'
import { SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { call, itLoggedNoSecret, newCampaign, useAttackGateway } from './attack-gateway.js'

// A team with write (team `writer`) whose member also holds an admin viewer's token reads
// the console's audit trail (GET /admin/audit), where each of its writes is a line with the
// write's path and the accounts it named, as the caller wrote them. The log scrubs each
// team's webhook secret from every line by value (the whole `whsec_…` and its bare
// base64): a write whose path or account held team `growth`'s secret was kept `[REDACTED]`
// there, and one holding a wrong guess was kept as sent. A guess at another team's
// signing key was then confirmed one write at a time (many per path).

const VIEWER_TOKEN = 'attack-viewer-token-0123456789abcdef'
// The base64 of 18 bytes: `whsec_` and 24 characters, so that the whole secret fits an audit
// line's account (32 characters); upper case, lower case and digits, as the log scrubs a bare
// key by value; a `+` for a spelling percent-encoding changes (32 characters: `%2B` fits an
// account; a path's percent-encoded `+` or `/` is refused before any team is read), and no `/`.
const BARE = 'Xk3+pQ7vLm2Rt9Wz4Bc8Nd1F'
const SECRET = `whsec_${BARE}`
// Team `all`'s: no `+`, `/` nor `=`, the characters a request id may hold (`[\w.:-]`).
const ID_BARE = 'Qm9vK2Zvb3JhbmFyYmF6cXV4'
const ID_SECRET = `whsec_${ID_BARE}`
const yaml = `jobs:\n  webhookHosts: [localhost]\n${SANDBOX_TEAMS_YAML.replace('    advertisers: [101, 102]\n', `    advertisers: [101, 102]\n    webhook: { url: "http://localhost:9/hook", secret: "${SECRET}" }\n`).replace('    refresh: true\n', `    refresh: true\n    webhook: { url: "http://localhost:9/hook", secret: "${ID_SECRET}" }\n`)}`

/** `text` with one character of its last six changed: a wrong guess of its form. */
function wrong(text: string): string {
  const i = text.length - 3
  return text.slice(0, i) + (text[i] === 'A' ? 'B' : 'A') + text.slice(i + 1)
}

const sg = useAttackGateway({ yaml, env: { ADMIN_VIEWER_TOKEN: VIEWER_TOKEN } })

let adminPort = 0
async function auditLines(): Promise<Record<string, unknown>[]> {
  if (adminPort === 0) {
    await sg.gw.admin.listen({ host: '127.0.0.1', port: Number(process.env.ATTACK_ADMIN_PORT ?? 0) })
    adminPort = (sg.gw.admin.server.address() as { port: number }).port
  }
  const body = await new Promise<string>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: adminPort, path: '/admin/audit', headers: { authorization: `Bearer ${VIEWER_TOKEN}` } }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (text += c))
      res.on('end', () => (res.statusCode === 200 ? resolve(text) : reject(new Error(`GET /admin/audit: ${String(res.statusCode)}`))))
    })
    req.on('error', reject)
    req.end()
  })
  return (JSON.parse(body) as { lines: Record<string, unknown>[] }).lines
}

/** The audit line the viewer reads of the write whose answer carried `reqId`, without its request id. */
async function lineOf(reqId: string): Promise<Record<string, unknown>> {
  const line = (await auditLines()).find((l) => l.action === 'write' && l.reqId === reqId)
  expect(line).toBeDefined()
  const { reqId: _id, time: _time, ...rest } = line as Record<string, unknown>
  return rest
}

/** The newest write line the viewer reads, without its time. */
async function lastWrite(): Promise<Record<string, unknown>> {
  const line = (await auditLines()).find((l) => l.action === 'write')
  expect(line).toBeDefined()
  const { time: _time, ...rest } = line as Record<string, unknown>
  return rest
}

async function write(method: string, target: string, json?: unknown, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(`${sg.url}${target}`, {
    method,
    headers: { 'x-api-key': KEYS.writer, ...headers, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(json === undefined ? {} : { body: JSON.stringify(json) }),
  })
  await res.arrayBuffer()
  return res.headers.get('x-request-id') ?? ''
}

describe('a viewer who writes, guessing at another team\'s webhook secret through the audit trail', () => {
  for (const [name, secret] of [['whole', SECRET], ['bare base64', BARE]] as const) {
    it(`reads the same line whether its path held the secret or not (${name})`, async () => {
      const right = await lineOf(await write('DELETE', `/api/v1/campaign/banner/delete/${secret}`))
      const guess = await lineOf(await write('DELETE', `/api/v1/campaign/banner/delete/${wrong(secret)}`))
      expect(guess).toEqual(right)
    })
  }

  it('reads the same line whether a path past the line\'s bound held the secret or not (the count of characters left out)', async () => {
    const long = `/api/v1/campaign/banner/delete/${'9'.repeat(1100)}-`
    const right = await lineOf(await write('DELETE', `${long}${BARE}`))
    const guess = await lineOf(await write('DELETE', `${long}${wrong(BARE)}`))
    expect(guess).toEqual(right)
  })

  for (const [name, secret] of [['whole', SECRET], ['bare base64', BARE], ['percent-encoded', encodeURIComponent(SECRET)]] as const) {
    it(`reads the same line whether an account it named held the secret or not (${name})`, async () => {
      const right = await lineOf(await write('POST', '/api/v1/campaign/banner/create', newCampaign(secret)))
      const guess = await lineOf(await write('POST', '/api/v1/campaign/banner/create', newCampaign(wrong(secret))))
      expect(guess).toEqual(right)
    })
  }

  for (const [name, secret] of [['whole', ID_SECRET], ['bare base64', ID_BARE], ['inside another id', `trace.${ID_BARE}.7`]] as const) {
    it(`reads the same line whether the write's x-request-id held the secret or not (${name})`, async () => {
      await write('DELETE', '/api/v1/campaign/banner/delete/999001', undefined, { 'x-request-id': secret })
      const right = await lastWrite()
      await write('DELETE', '/api/v1/campaign/banner/delete/999001', undefined, { 'x-request-id': wrong(secret) })
      const guess = await lastWrite()
      expect(guess).toEqual(right)
    })
  }

  it('a write of its own keeps its path and accounts in the line', async () => {
    const line = await lineOf(await write('POST', '/api/v1/campaign/banner/create', newCampaign(101)))
    expect(line).toMatchObject({ team: 'writer', path: '/api/v1/campaign/banner/create', accounts: ['101'] })
    const answer = await call(sg, 'GET', '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07', { key: KEYS.growth })
    expect(answer.status).toBe(200)
  })
})

itLoggedNoSecret(sg)
