import { execFileSync, type ChildProcess } from 'node:child_process'
import { createHmac, randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { afterEach, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { KEYS, listen, REPORT_PATH, TEAMS_YAML } from '../helpers/build-gateway.js'
import { useConfigMaps } from '../helpers/config-map.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { pointer, resolveRef, type Json } from '../helpers/openapi-doc.js'
import { docBlock } from '../helpers/readme-blocks.js'
import { buildInfo } from '../../src/observe/build-info.js'
import { runDocsReceiver } from '../helpers/docs-receiver.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// The webhook receiver docs/jobs.md prints ("Pushed when done"), run as a user runs it
// (node receiver.mjs, its secrets and port in its environment), behind a recorder that
// passes each push on and keeps it, so that the test can send it again as it was, or
// changed: a gateway's real pushes are taken once each, a repeat answered 2xx and not
// acted on again (a retry carries a new timestamp), a changed, late or foreign-signed
// push refused, and the secret changed the way the docs say with no push refused.

const RECEIVER = docBlock('docs/jobs.md', 'js', '// receiver.mjs')
const ADMIN_TOKEN = 'webhook-receiver-docs-admin-token-0123'
const OLD = `whsec_${randomBytes(24).toString('base64')}`
const NEW = `whsec_${randomBytes(24).toString('base64')}`

interface Push {
  headers: IncomingHttpHeaders
  body: Buffer
  /** The receiver's answer to it. */
  status: number
}

interface Receiver {
  url: string
  /** What it printed: one JSON line for each push it acted on. */
  acted: () => { job: string; state: string; result: string }[]
  stop: () => Promise<void>
}

const children: ChildProcess[] = []
const servers: Server[] = []
const dirs: string[] = []
afterEach(async () => {
  for (const child of children.splice(0)) await stop(child)
  for (const s of servers.splice(0)) {
    s.closeAllConnections()
    await new Promise((resolve) => s.close(resolve))
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

/** Ends `child` unless it ended already (a signal's end leaves exitCode null). */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) await new Promise((resolve) => child.once('exit', resolve).kill())
}

/**
 * The documented receiver, written to a file and run with `secrets` (space-separated, as
 * the docs say) on a free port, the ids it took in the Redis at `redisUrl` when given
 * (its `npm install ioredis` the repository's own); ready once it answers.
 */
async function startReceiver(secrets: string[], redisUrl?: string): Promise<Receiver> {
  const dir = mkdtempSync(join(tmpdir(), 'rgw-receiver-'))
  dirs.push(dir)
  writeFileSync(join(dir, 'receiver.mjs'), RECEIVER)
  symlinkSync(fileURLToPath(new URL('../../node_modules', import.meta.url)), join(dir, 'node_modules'))
  const env = { WEBHOOK_SECRETS: secrets.join(' '), ...(redisUrl === undefined ? {} : { REDIS_URL: redisUrl }) }
  const receiver = await runDocsReceiver([process.execPath, join(dir, 'receiver.mjs')], env, children)
  return { url: receiver.url, acted: receiver.acted, stop: () => stop(receiver.child) }
}

/** POSTs a push to the receiver as the gateway sent it, or with `headers` changed and `body` instead; its status. */
async function send(receiver: Receiver, push: Push, change: { headers?: Record<string, string>; body?: Buffer } = {}): Promise<number> {
  const headers: Record<string, string> = {}
  for (const name of ['content-type', 'webhook-id', 'webhook-timestamp', 'webhook-signature']) headers[name] = String(push.headers[name])
  const res = await fetch(receiver.url, { method: 'POST', headers: { ...headers, ...change.headers }, body: change.body ?? push.body })
  await res.arrayBuffer()
  return res.status
}

/**
 * The gateway's webhook: passes each push on to `to()` (the receiver as it is then) and
 * keeps it with the receiver's answer, answered to the gateway as `answer` makes it of
 * that (the receiver's own answer unless it says otherwise: a lost answer, say).
 */
async function recorder(to: () => Receiver, answer: (status: number, nth: number) => number = (s) => s): Promise<{ url: string; pushes: Push[] }> {
  const pushes: Push[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const push: Push = { headers: req.headers, body: Buffer.concat(chunks), status: 0 }
      void send(to(), push).then((status) => {
        push.status = status
        pushes.push(push)
        res.writeHead(answer(status, pushes.length)).end()
      })
    })
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  // Named `localhost`: the sandbox, the platform, is at 127.0.0.1.
  return { url: `http://localhost:${(server.address() as AddressInfo).port}/hook`, pushes }
}

/** TEAMS_YAML with team `all` pushing to `url`, signed with `secret`, which the operator allows. */
function webhookYaml(url: string, secret: string): string {
  const team = TEAMS_YAML.replace('    refresh: true\n', `    refresh: true\n    webhook: { url: "${url}", secret: "${secret}" }\n`)
  return `${team}jobs:\n  webhookHosts: [localhost]\n`
}

/** The signature the docs describe, of `body` sent as `id` at `timestamp`, keyed by `secret`. */
function sign(secret: string, id: string, timestamp: number, body: Buffer): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64')
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64')}`
}

/** The header names of the table of a push's headers in docs/jobs.md ("Pushed when done"), sorted. */
function pushHeadersDocumented(): string[] {
  const docs = readFileSync(new URL('../../docs/jobs.md', import.meta.url), 'utf8')
  const section = docs.slice(docs.indexOf('## Pushed when done'))
  const table = section.slice(section.indexOf('| header |'), section.indexOf('\n\n', section.indexOf('| header |')))
  return [...table.matchAll(/^\| `([a-z-]+)` \|/gm)].map((m) => m[1]!).sort()
}

/** The verifier of the Standard Webhooks package a receiving team installs (`npm install standardwebhooks`, its own implementation, not the docs'), from the registry into a folder of the test's. */
function standardWebhooks(): new (secret: string) => { verify: (payload: string, headers: Record<string, string>) => unknown } {
  const dir = mkdtempSync(join(tmpdir(), 'rgw-standardwebhooks-'))
  dirs.push(dir)
  writeFileSync(join(dir, 'package.json'), '{"private": true}\n')
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('npm_')))
  execFileSync('npm', ['install', 'standardwebhooks@1', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, env, timeout: 180_000, stdio: 'ignore' })
  return (createRequire(join(dir, 'package.json'))('standardwebhooks') as { Webhook: ReturnType<typeof standardWebhooks> }).Webhook
}

/** The `webhook-*` headers of `push`, as a receiver hands them to a verifier. */
function webhookHeaders(push: Push): Record<string, string> {
  return Object.fromEntries(['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [name, String(push.headers[name])]))
}

/** The field names of the table of a job's status in docs/jobs.md ("Reading"), the body a push carries, sorted. */
function statusFieldsDocumented(): string[] {
  const docs = readFileSync(new URL('../../docs/jobs.md', import.meta.url), 'utf8')
  const section = docs.slice(docs.indexOf('## Reading'))
  const table = section.slice(section.indexOf('| field |'), section.indexOf('\n\n', section.indexOf('| field |')))
  return table.split('\n').slice(2).flatMap((row) => [...row.split(' | ')[0]!.matchAll(/`(\w+)`/g)].map((m) => m[1]!)).sort()
}

describe('the webhook receiver docs/jobs.md prints, against a gateway\'s real pushes (demo mode, the sandbox over HTTP)', () => {
  const sandbox = useSandbox()
  const gateways = useGateways()
  const configMap = useConfigMaps()

  async function gateway(yaml: string): Promise<{ ask: (query: string) => Promise<string>; reload: () => Promise<string>; dir: ReturnType<typeof configMap> }> {
    const dir = configMap(yaml)
    const env = { CONFIG_FILE: dir.path, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN, LOG_LEVEL: 'info' }
    const gw = await listen(await gateways.build(loadConfig({ env }), { configSource: { env } }))
    return {
      dir,
      ask: async (query) => {
        const res = await fetch(`${gw.url}${REPORT_PATH}?${query}`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
        expect(res.status).toBe(202)
        return ((await res.json()) as { id: string }).id
      },
      reload: async () => (await gw.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json<{ result: string }>().result,
    }
  }

  it('acts on a real push once; answers its repeat 204 without acting again; refuses it changed, late or signed with another secret', async () => {
    const receiver = await startReceiver([OLD])
    const hook = await recorder(() => receiver)
    const gw = await gateway(webhookYaml(hook.url, OLD))
    const id = await gw.ask('advertiserId=101&dateFrom=2025-01-01&dateTo=2025-06-30')
    await waitFor('the push taken', () => hook.pushes.length === 1, testTimeLeft())
    const [push] = hook.pushes as [Push]
    expect(push.status).toBe(204)
    expect(receiver.acted()).toEqual([{ job: id, state: 'done', result: `/api/v1/jobs/${id}/result` }])

    // The same push again (a replay, or a retry whose first answer was lost): taken, not acted on.
    expect(await send(receiver, push)).toBe(204)
    // Changed: its body, its id, its timestamp, its signature.
    const status = JSON.parse(push.body.toString('utf8')) as Record<string, unknown>
    expect(await send(receiver, push, { body: Buffer.from(JSON.stringify({ ...status, state: 'failed' })) })).toBe(401)
    expect(await send(receiver, push, { body: Buffer.from(JSON.stringify(status, null, 1)) })).toBe(401)
    expect(await send(receiver, push, { headers: { 'webhook-id': 'msg_another' } })).toBe(401)
    expect(await send(receiver, push, { headers: { 'webhook-timestamp': String(Number(push.headers['webhook-timestamp']) + 1) } })).toBe(401)
    expect(await send(receiver, push, { headers: { 'webhook-signature': 'v1,' } })).toBe(401)
    expect(await send(receiver, push, { headers: { 'webhook-signature': sign(NEW, `msg_${id}`, Number(push.headers['webhook-timestamp']), push.body) } })).toBe(401)
    // Signed right, with a fresh id, but outside the 5 minutes either side of now: refused; inside them: taken.
    const now = Math.floor(Date.now() / 1000)
    for (const at of [now - 6 * 60, now + 6 * 60]) expect(await send(receiver, push, { headers: { 'webhook-id': `msg_late${at}`, 'webhook-timestamp': String(at), 'webhook-signature': sign(OLD, `msg_late${at}`, at, push.body) } })).toBe(401)
    expect(await send(receiver, push, { headers: { 'webhook-id': 'msg_inside', 'webhook-timestamp': String(now - 60), 'webhook-signature': `v1,AAAA ${sign(OLD, 'msg_inside', now - 60, push.body)}` } })).toBe(204)
    expect(receiver.acted().map((a) => a.job)).toEqual([id, id])
  })

  it('gets exactly the headers docs/jobs.md lists, its user-agent the gateway\'s name and version, nothing a browser sends', async () => {
    const receiver = await startReceiver([OLD])
    const hook = await recorder(() => receiver)
    const gw = await gateway(webhookYaml(hook.url, OLD))
    await gw.ask('advertiserId=101&dateFrom=2025-01-01&dateTo=2025-05-31')
    await waitFor('the push taken', () => hook.pushes.length === 1, testTimeLeft())
    const [push] = hook.pushes as [Push]
    expect(push.status).toBe(204)
    const sent = Object.keys(push.headers).sort()
    expect(sent).toEqual(['connection', 'content-length', 'content-type', 'host', 'user-agent', 'webhook-id', 'webhook-signature', 'webhook-timestamp'])
    expect(sent).toEqual(pushHeadersDocumented())
    expect(push.headers['user-agent']).toBe(`report-gateway/${buildInfo().version}`)
    expect(push.headers['content-type']).toBe('application/json')
    expect(push.headers['content-length']).toBe(String(push.body.length))
    expect(push.headers.connection).toBe('keep-alive')
  })

  it('gets pushes as the OpenAPI document\'s webhook jobEnded says: its headers, its JobStatus body, the answers it takes', async () => {
    const receiver = await startReceiver([OLD])
    const hook = await recorder(() => receiver)
    const gw = await gateway(webhookYaml(hook.url, OLD))
    await gw.ask('advertiserId=101&dateFrom=2025-05-01&dateTo=2025-06-30')
    await waitFor('the push taken', () => hook.pushes.length === 1, testTimeLeft())
    const [push] = hook.pushes as [Push]
    const doc = JSON.parse(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8')) as Json
    const post = (doc.webhooks as Record<string, Record<string, Json>> | undefined)?.jobEnded?.post
    expect(post, 'webhooks.jobEnded.post in docs/openapi.json').toBeDefined()
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true })
    ajv.addSchema(doc, 'openapi.json')
    const parameters = (post!.parameters as unknown[]).map((p) => resolveRef(doc, p))
    expect(parameters.map((p) => [p.in, p.name, p.required])).toEqual([['header', 'webhook-id', true], ['header', 'webhook-timestamp', true], ['header', 'webhook-signature', true], ['header', 'user-agent', true]])
    for (const p of parameters) expect(ajv.validate(p.schema as Json, push.headers[p.name as string]), `${p.name as string}: ${ajv.errorsText()}`).toBe(true)
    const content = (post!.requestBody as { content: Record<string, { schema: Json }> }).content
    expect(Object.keys(content)).toEqual([push.headers['content-type']])
    expect(ajv.validate({ $ref: `openapi.json${pointer('webhooks', 'jobEnded', 'post', 'requestBody', 'content', 'application/json', 'schema')}` }, JSON.parse(push.body.toString('utf8'))), ajv.errorsText()).toBe(true)
    expect(Object.keys(post!.responses as Json)).toEqual(['2XX', 'default'])
    // What a receiver reads of the body, every field of it, in the docs' table of a job's status.
    expect(statusFieldsDocumented()).toEqual(Object.keys(JSON.parse(push.body.toString('utf8')) as Json).sort())
  })

  it('acts once on a push the gateway tries again (its first answer lost): the retry carries a new timestamp and the same webhook-id', async () => {
    const receiver = await startReceiver([OLD])
    // The receiver took the first attempt; its answer does not reach the gateway (a 503 instead), which tries again 1 s later.
    const hook = await recorder(() => receiver, (status, nth) => (nth === 1 ? 503 : status))
    const gw = await gateway(webhookYaml(hook.url, OLD))
    const id = await gw.ask('advertiserId=101&dateFrom=2025-02-01&dateTo=2025-06-30')
    await waitFor('the retry taken', () => hook.pushes.length === 2, testTimeLeft())
    const [first, retry] = hook.pushes as [Push, Push]
    expect([first.status, retry.status]).toEqual([204, 204])
    expect(retry.headers['webhook-id']).toBe(first.headers['webhook-id'])
    expect(Number(retry.headers['webhook-timestamp'])).toBeGreaterThan(Number(first.headers['webhook-timestamp']))
    expect(receiver.acted()).toEqual([{ job: id, state: 'done', result: `/api/v1/jobs/${id}/result` }])
  })

  it('changes the secret as the docs say, no push refused: the receiver takes both, the team\'s secret changes (a teams reload), the receiver drops the old one; the standardwebhooks package verifies each push, a retry too, with the secret it was signed with alone', async () => {
    const Webhook = standardWebhooks()
    let receiver = await startReceiver([OLD, NEW])
    // The first push's answer lost (a 503 instead): the gateway tries it again, signed anew.
    const hook = await recorder(() => receiver, (status, nth) => (nth === 1 ? 503 : status))
    const gw = await gateway(webhookYaml(hook.url, OLD))
    const before = await gw.ask('advertiserId=101&dateFrom=2025-03-01&dateTo=2025-06-30')
    await waitFor('the push under the old secret taken, and its retry', () => hook.pushes.length === 2, testTimeLeft())
    gw.dir.update(webhookYaml(hook.url, NEW))
    expect(await gw.reload()).toBe('applied')
    const after = await gw.ask('advertiserId=101&dateFrom=2025-04-01&dateTo=2025-06-30')
    await waitFor('the push under the new secret taken', () => hook.pushes.length === 3, testTimeLeft())
    const [old, retry, renewed] = hook.pushes as [Push, Push, Push]
    expect([old.status, retry.status, renewed.status]).toEqual([204, 204, 204])
    expect(receiver.acted().map((a) => a.job)).toEqual([before, after])
    // A receiving team's own verifier (the Standard Webhooks package, not the docs' code).
    for (const [push, secret, other, job] of [[old, OLD, NEW, before], [retry, OLD, NEW, before], [renewed, NEW, OLD, after]] as const) {
      const body = push.body.toString('utf8')
      expect(push.headers['webhook-id']).toBe(`msg_${job}`)
      expect(new Webhook(secret).verify(body, webhookHeaders(push))).toMatchObject({ id: job, state: 'done', result: `/api/v1/jobs/${job}/result` })
      expect(() => new Webhook(other).verify(body, webhookHeaders(push))).toThrow()
      expect(() => new Webhook(secret).verify(body.replace('"done"', '"failed"'), webhookHeaders(push))).toThrow()
    }

    await receiver.stop()
    receiver = await startReceiver([NEW])
    expect(await send(receiver, old)).toBe(401)
    expect(await send(receiver, renewed)).toBe(204)
    expect(receiver.acted().map((a) => a.job)).toEqual([after])
  }, 240_000)

  describe('two receivers behind a balancer, or one restarted: each push a retry sends to the other', () => {
    const redis = useRedis()

    /** Two receivers (the ids they took in Redis when `redisUrl` is given) behind a balancer taking turns; the gateway's first attempt's answer lost, so that its retry reaches the other. */
    async function pair(redisUrl?: string): Promise<{ receivers: Receiver[]; hook: { pushes: Push[] }; id: string }> {
      const receivers = [await startReceiver([OLD], redisUrl), await startReceiver([OLD], redisUrl)]
      let turn = 0
      const hook = await recorder(() => receivers[turn++ % 2]!, (status, nth) => (nth === 1 ? 503 : status))
      const gw = await gateway(webhookYaml(hook.url, OLD))
      const id = await gw.ask('advertiserId=101&dateFrom=2025-02-01&dateTo=2025-05-31')
      await waitFor('the retry taken', () => hook.pushes.length === 2, testTimeLeft())
      expect(hook.pushes.map((p) => p.status)).toEqual([204, 204])
      return { receivers, hook, id }
    }

    it('acts twice with the ids in memory, as the docs warn: each instance keeps its own', async () => {
      const { receivers, id } = await pair()
      expect(receivers.flatMap((r) => r.acted()).map((a) => a.job)).toEqual([id, id])
    })

    it('acts once with the ids in Redis (REDIS_URL, SET NX for the window): across the two, and across a restart', async () => {
      const { receivers, hook, id } = await pair(redis.server.url)
      expect(receivers.flatMap((r) => r.acted()).map((a) => a.job)).toEqual([id])
      // The id is kept for jobs.webhookRetryFor (1h) and the window (5 min), no longer.
      const keys = await redis.client.keys('*')
      expect(keys).toHaveLength(1)
      const left = await redis.client.pttl(keys[0]!)
      expect(left).toBeGreaterThan(60 * 60_000)
      expect(left).toBeLessThanOrEqual(65 * 60_000)

      const [first] = receivers as [Receiver, Receiver]
      await first.stop()
      const restarted = await startReceiver([OLD], redis.server.url)
      expect(await send(restarted, hook.pushes[0]!)).toBe(204)
      expect(restarted.acted()).toEqual([])
    })
  })
})
