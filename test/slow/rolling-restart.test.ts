import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { KEYS, sandboxLoginEnv, TEAMS_YAML, teamsYamlWith } from '../helpers/build-gateway.js'
import { bearerOf } from '../helpers/gateway-calls.js'
import { freshRequest, openLoad, RoundRobinBalancer, type Answer, type BalancedAnswer } from '../helpers/balancers.js'
import { spawnGateway, spawnGateways, type GatewayProcess } from '../helpers/gateway-process.js'
import { needTool, TOOLS } from '../helpers/missing-tools.js'
import { hasNginx, startNginx, type Nginx } from '../helpers/nginx.js'
import { redisAvailability, startRedis } from '../helpers/start-redis.js'
import { startSandbox, type Sandbox } from '../../src/sandbox/sandbox.js'
import { startsTimeout, waitFor } from '../helpers/wait.js'

// A rolling restart of 3 replicas at 100 requests a second loses no answer behind a
// balancer that retries nothing (contract, "Readiness" and "Stopping"): a replica told to
// stop (SIGTERM) answers readiness 503 at once and goes on accepting and answering, with
// `connection: close`, for its drain (shutdownDrain, 5 s by default: these replicas run
// with the defaults), then stops.
//   - Behind nginx with `proxy_next_upstream off`: as an ingress does, nginx learns of the
//     change only after the replica was told to stop (here: once it has sent it at least
//     one request since), then reloads its configuration without it.
//   - Behind a round-robin balancer that polls each replica's /readyz every second: the
//     replica is told to stop just after a poll found it ready, so requests go on
//     reaching it until the next poll.
// What is asserted are counts: answers lost (anything but a 200, a failed connection
// included), answers from stopping replicas and their `connection: close`, readiness
// polls that saw 503, exit codes.

const REPLICAS = 3
const PER_SECOND = 100
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&byDate=1&dateFrom=2026-03-01&dateTo=2026-03-07'
const HEADERS = { 'x-api-key': KEYS.all }

const nginxFound = needTool(TOOLS.nginx, hasNginx(), 'the rolling restart behind nginx')
const redisFound = redisAvailability('the rolling restart with a token rotation').available
const ADMIN_TOKEN = 'rolling-admin-token-0123456789abcdef'

let sandbox: Sandbox | undefined
const opened: { close(): Promise<void> }[] = []

beforeAll(async () => {
  sandbox = await startSandbox()
})
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close()
})
afterAll(async () => {
  await sandbox?.close()
})

function replicaOptions() {
  const s = sandbox as Sandbox
  return { env: { PLATFORM_BASE_URL: s.url, PLATFORM_TOKEN: s.issueToken() }, yaml: TEAMS_YAML }
}

async function replica(): Promise<GatewayProcess> {
  const gw = await spawnGateway(replicaOptions())
  opened.push(gw)
  return gw
}

/** An answer, and the order its request was sent in (0 for the first). */
type Sent<T> = T & { sent: number }

/** The answers lost (anything but a 200), counted by what they were. */
function lostOf(answers: Answer[]): Record<string, number> {
  const lost: Record<string, number> = {}
  for (const a of answers) {
    if (a.status === 200) continue
    const what = `${a.status}${a.error ? ` ${a.error}` : ''}${a.headers['x-upstream'] ? ` from ${String(a.headers['x-upstream'])}` : ''}`
    lost[what] = (lost[what] ?? 0) + 1
  }
  return lost
}

describe('a rolling restart of 3 replicas at 100 requests a second', () => {
  it.skipIf(!nginxFound)('loses no answer behind nginx with proxy_next_upstream off', async () => {
    const live = await spawnGateways(REPLICAS, replicaOptions())
    opened.push(...live)
    const nginx: Nginx = await startNginx(live.map((g) => g.port))
    opened.push(nginx)
    const answers: Sent<Answer>[] = []
    const load = openLoad(PER_SECOND, async (sent) => {
      const answer = { ...(await freshRequest(`${nginx.url}${REPORT}`, HEADERS)), sent }
      answers.push(answer)
      return answer
    })
    const upstreamOf = (gw: GatewayProcess) => `127.0.0.1:${gw.port}`
    const stopped: { gw: GatewayProcess; from: number }[] = []
    try {
      await waitFor('answers through nginx from every replica', () => live.every((gw) => answers.some((a) => a.headers['x-upstream'] === upstreamOf(gw))))
      for (let i = 0; i < REPLICAS; i++) {
        const fresh = await replica()
        const old = live[i] as GatewayProcess
        live[i] = fresh
        const from = load.sent()
        old.kill('SIGTERM')
        stopped.push({ gw: old, from })
        // nginx hears of it late, as an ingress does: once it has sent the stopping replica a request.
        await waitFor(() => `nginx to send a request to the stopping replica ${upstreamOf(old)}`, () => answers.some((a) => a.sent >= from && a.headers['x-upstream'] === upstreamOf(old)))
        const reloaded = load.sent()
        nginx.setUpstreams(live.map((g) => g.port))
        await waitFor(() => `nginx to send a request to the new replica ${upstreamOf(fresh)}:\n${nginx.errors()}`, () => answers.some((a) => a.sent >= reloaded && a.headers['x-upstream'] === upstreamOf(fresh)))
      }
      // The load goes on until every stopped replica has exited: its end of drain is under load too.
      const exits = await Promise.all(stopped.map(({ gw }) => gw.exited))
      expect(exits.map((e) => e.code)).toEqual(stopped.map(() => 0))
    } finally {
      await load.stop()
    }
    // Requests sent after a replica was told to stop that it answered (it went on accepting).
    const fromStopping = stopped.flatMap(({ gw, from }) => answers.filter((a) => a.sent >= from && a.headers['x-upstream'] === upstreamOf(gw)))
    console.log(`rolling restart behind nginx: ${answers.length} requests, lost ${JSON.stringify(lostOf(answers))}, ${fromStopping.length} answered by replicas after their SIGTERM`)
    expect(lostOf(answers), `answers lost of ${answers.length}`).toEqual({})
    expect(fromStopping.length, 'answers from replicas told to stop').toBeGreaterThanOrEqual(REPLICAS)
    expect(answers.length).toBeGreaterThan(PER_SECOND)
  }, startsTimeout(6))

  it('loses no answer behind a round-robin balancer that polls readiness each second', async () => {
    const balancer = new RoundRobinBalancer(1000)
    opened.push(balancer)
    const live = await spawnGateways(REPLICAS, replicaOptions())
    opened.push(...live)
    const name = (gw: GatewayProcess) => `127.0.0.1:${gw.port}`
    for (const gw of live) balancer.add(name(gw), gw.port)
    balancer.start()
    await waitFor('the balancer to find every replica ready', () => live.every((gw) => balancer.isReady(name(gw))))
    const answers: Sent<BalancedAnswer>[] = []
    const load = openLoad(PER_SECOND, async (sent) => {
      const answer = { ...(await balancer.send(REPORT, HEADERS)), sent }
      answers.push(answer)
      return answer
    })
    // from: the first request sent after the signal; draining: the first sent once the replica answered readiness 503.
    const stopped: { gw: GatewayProcess; from: number; draining: number }[] = []
    const exits: Promise<number | null>[] = []
    try {
      for (let i = 0; i < REPLICAS; i++) {
        const fresh = await replica()
        balancer.add(name(fresh), fresh.port)
        await waitFor(() => `the balancer to find ${name(fresh)} ready`, () => balancer.isReady(name(fresh)))
        const old = live[i] as GatewayProcess
        live[i] = fresh
        // Told to stop just after a poll found it ready: the balancer sends it requests until its next poll.
        const rounds = balancer.rounds
        await waitFor(() => `a poll of ${name(old)}`, () => balancer.rounds > rounds)
        const from = load.sent()
        old.kill('SIGTERM')
        // A request sent just after the signal may be read before the process handles it: these are counted from its 503.
        await waitFor(() => `${name(old)} to answer readiness 503`, async () => (await freshRequest(`${old.adminUrl}/readyz`)).status === 503)
        stopped.push({ gw: old, from, draining: load.sent() })
        exits.push(
          old.exited.then((e) => {
            balancer.remove(name(old))
            return e.code
          }),
        )
        await waitFor(() => `the balancer to take ${name(old)} out`, () => !balancer.isReady(name(old)))
      }
      expect(await Promise.all(exits)).toEqual(stopped.map(() => 0))
    } finally {
      await load.stop()
    }
    // Requests sent after a replica was told to stop that it answered.
    const fromStopping = stopped.flatMap(({ gw, from }) => answers.filter((a) => a.sent >= from && a.backend === name(gw)))
    console.log(`rolling restart behind a readiness-polling balancer: ${answers.length} requests, lost ${JSON.stringify(lostOf(answers))}, ${fromStopping.length} answered by replicas after their SIGTERM`)
    expect(lostOf(answers), `answers lost of ${answers.length}`).toEqual({})
    // Readiness said 503 before the replica stopped accepting: the balancer saw it.
    expect(stopped.map(({ gw }) => balancer.polls(name(gw)).includes(503) || 'no poll saw 503')).toEqual(stopped.map(() => true))
    // Every answer of a draining replica closed its connection: the balancer's next request went elsewhere.
    const fromDraining = stopped.flatMap(({ gw, draining }) => answers.filter((a) => a.sent >= draining && a.backend === name(gw)))
    expect(fromDraining.length, 'answers from replicas answering readiness 503').toBeGreaterThan(0)
    expect(fromDraining.filter((a) => a.headers.connection !== 'close').length, 'answers of draining replicas without connection: close').toBe(0)
    expect(fromStopping.length, 'answers from replicas told to stop').toBeGreaterThan(0)
    expect(answers.length).toBeGreaterThan(PER_SECOND)
  }, startsTimeout(6))

  /**
   * Three replicas restarted one after the other behind nginx at PER_SECOND, every fifth
   * request past the cache so that the platform sees the token all along; before the second
   * restart `rotate` changes the platform token (and says which one it replaces), and once
   * every running replica uses the new one the old one is revoked at the platform. Each
   * replica started after the change must take the new token.
   */
  async function rollWithRotation(env: Record<string, string>, rotate: (live: GatewayProcess[]) => Promise<string>) {
    const s = sandbox as Sandbox
    const redis = await startRedis()
    opened.push(redis)
    const options = { env: { PLATFORM_BASE_URL: s.url, REDIS_URL: redis.url, ADMIN_TOKEN, ...env }, yaml: teamsYamlWith({ cache: { refreshMinAge: 0 } }) }
    const spawned: GatewayProcess[] = []
    const start = async (count: number) => {
      const made = await spawnGateways(count, options)
      opened.push(...made)
      spawned.push(...made)
      return made
    }
    const fingerprint = async (gw: GatewayProcess) => {
      const res = await fetch(`${gw.adminUrl}/admin/token`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      return ((await res.json()) as { fingerprint: string }).fingerprint
    }
    const live = await start(REPLICAS)
    const oldFingerprint = await fingerprint(live[0] as GatewayProcess)
    const nginx: Nginx = await startNginx(live.map((g) => g.port))
    opened.push(nginx)
    const answers: Sent<Answer>[] = []
    const load = openLoad(PER_SECOND, async (sent) => {
      const headers: Record<string, string> = sent % 5 === 0 ? { ...HEADERS, 'cache-control': 'no-cache' } : HEADERS
      const answer = { ...(await freshRequest(`${nginx.url}${REPORT}`, headers)), sent }
      answers.push(answer)
      return answer
    })
    const upstreamOf = (gw: GatewayProcess) => `127.0.0.1:${gw.port}`
    const stopped: GatewayProcess[] = []
    let newFingerprint = ''
    let revokedAt = Number.POSITIVE_INFINITY
    let revokedAtMs = Number.POSITIVE_INFINITY
    let oldToken = ''
    try {
      await waitFor('answers through nginx from every replica', () => live.every((gw) => answers.some((a) => a.headers['x-upstream'] === upstreamOf(gw))))
      for (let i = 0; i < REPLICAS; i++) {
        if (i === 1) {
          oldToken = await rotate(live)
          await waitFor('every running replica on the new token', async () => {
            const prints = await Promise.all(live.map(fingerprint))
            return prints.every((p) => p !== oldFingerprint && p === prints[0])
          })
          newFingerprint = await fingerprint(live[0] as GatewayProcess)
          revokedAt = load.sent()
          revokedAtMs = Date.now()
          s.revokeToken(oldToken)
        }
        const [fresh] = await start(1)
        const old = live[i] as GatewayProcess
        live[i] = fresh as GatewayProcess
        const from = load.sent()
        old.kill('SIGTERM')
        stopped.push(old)
        await waitFor(() => `nginx to send a request to the stopping replica ${upstreamOf(old)}`, () => answers.some((a) => a.sent >= from && a.headers['x-upstream'] === upstreamOf(old)))
        const reloaded = load.sent()
        nginx.setUpstreams(live.map((g) => g.port))
        await waitFor(() => `nginx to send a request to the new replica ${upstreamOf(fresh as GatewayProcess)}:\n${nginx.errors()}`, () => answers.some((a) => a.sent >= reloaded && a.headers['x-upstream'] === upstreamOf(fresh as GatewayProcess)))
      }
      const exits = await Promise.all(stopped.map((gw) => gw.exited))
      expect(exits.map((e) => e.code)).toEqual(stopped.map(() => 0))
      // Every replica running now uses the new token.
      expect(await Promise.all(live.map(fingerprint))).toEqual(live.map(() => newFingerprint))
    } finally {
      await load.stop()
    }
    console.log(`rolling restart with a token rotation: ${answers.length} requests, lost ${JSON.stringify(lostOf(answers))}, ${answers.filter((a) => a.sent >= revokedAt).length} after the revocation`)
    expect(lostOf(answers), `answers lost of ${answers.length}`).toEqual({})
    expect(answers.filter((a) => a.sent >= revokedAt).length).toBeGreaterThan(PER_SECOND / 5)
    // The old token was never sent once revoked.
    expect(s.requests.filter((r) => r.at >= revokedAtMs && bearerOf(r) === oldToken).length, 'requests with the revoked token').toBe(0)
    // No token the platform saw in any line any replica wrote.
    const tokens = new Set(s.requests.filter((r) => r.path !== '/oauth/token').map(bearerOf).filter((t): t is string => typeof t === 'string' && t !== ''))
    expect(tokens.size).toBeGreaterThanOrEqual(2)
    for (const gw of spawned) for (const token of tokens) expect(gw.output().includes(token)).toBe(false)
    return { spawned, oldFingerprint, newFingerprint }
  }

  // The platform token rotated by file (a Secret's new content) between two restarts
  // (docs/operations/platform-token.md): one of the five replicas sends the old one after that.
  it.skipIf(!nginxFound || !redisFound)('loses no answer behind nginx while the platform token is rotated by file between the restarts', async () => {
    const s = sandbox as Sandbox
    const dir = mkdtempSync(join(tmpdir(), 'rgw-rolling-token-'))
    opened.push({ close: async () => rmSync(dir, { recursive: true, force: true }) })
    const tokenFile = join(dir, 'platform-token')
    const oldToken = s.issueToken()
    writeFileSync(tokenFile, oldToken)
    const { spawned, oldFingerprint, newFingerprint } = await rollWithRotation({ PLATFORM_TOKEN_FILE: tokenFile }, async () => {
      // A Secret's new content: the file replaced whole, as the kubelet swaps it.
      writeFileSync(`${tokenFile}.new`, s.issueToken())
      renameSync(`${tokenFile}.new`, tokenFile)
      return oldToken
    })
    // The audit trail: each replica running at the change wrote one line of it, from the old
    // token to the new, as it first learned of it: by reading the file itself (reason file),
    // or from the replica that read it first (reason shared, origin file); one at least read
    // it first. Those started after it took the new token at start, and named no other.
    const audits = (gw: GatewayProcess) => gw.output().split('\n').filter((l) => l.includes('"msg":"platform token changed"')).map((l) => JSON.parse(l) as Record<string, unknown>)
    const atChange = spawned.slice(0, REPLICAS + 1)
    const afterChange = spawned.slice(REPLICAS + 1)
    const changeLines = atChange.map((gw) => audits(gw).filter((a) => a.newFingerprint === newFingerprint))
    console.log(`the rotation's audit lines: ${JSON.stringify(changeLines.map((lines) => lines.map((a) => [a.reason, a.source, a.origin])))}`)
    for (const lines of changeLines) {
      expect(lines.map((a) => [a.oldFingerprint, a.origin])).toEqual([[oldFingerprint, 'file']])
      expect(['file', 'shared']).toContain(lines[0]?.reason)
    }
    expect(changeLines.some((lines) => lines[0]?.reason === 'file')).toBe(true)
    for (const gw of afterChange) expect(audits(gw).map((a) => [a.reason, a.source, a.oldFingerprint, a.newFingerprint])).toEqual([['start', 'file', null, newFingerprint]])
  }, 420_000)

  // The token put on one replica by PUT /admin/token between two restarts: the others take
  // it from the bus, and the replicas started after (of the same PLATFORM_TOKEN) from Redis,
  // none of them with the token it was started with.
  it.skipIf(!nginxFound || !redisFound)('loses no answer behind nginx while the platform token is put by PUT /admin/token between the restarts', async () => {
    const s = sandbox as Sandbox
    const oldToken = s.issueToken()
    await rollWithRotation({ PLATFORM_TOKEN: oldToken }, async (live) => {
      const res = await fetch(`${(live[0] as GatewayProcess).adminUrl}/admin/token`, { method: 'PUT', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ token: s.issueToken() }) })
      expect(res.status).toBe(200)
      return oldToken
    })
  }, 420_000)

  // The password login's token revoked at the platform between two restarts: the replica
  // that meets the 401 logs in again and the others take its token from the bus, the
  // replicas started after from Redis; the caller whose call met the 401 is answered.
  it.skipIf(!nginxFound || !redisFound)('loses no answer behind nginx while the password login\'s token is revoked and logged in again between the restarts', async () => {
    const s = sandbox as Sandbox
    await rollWithRotation(sandboxLoginEnv(s), async () => {
      const inUse = bearerOf(s.requests.findLast((r) => r.path !== '/oauth/token')) as string
      s.revokeToken(inUse)
      return inUse
    })
  }, 420_000)
})
