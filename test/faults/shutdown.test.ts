import { connect, type Socket } from 'node:net'
import { describe, expect, it } from 'vitest'
import { KEYS, teamsYamlWith } from '../helpers/build-gateway.js'
import { freshRequest } from '../helpers/balancers.js'
import { useSandboxGatewayProcess } from '../helpers/fixtures.js'
import { timedRequest } from '../helpers/gateway-process.js'
import { connectionRefused } from '../helpers/sandbox-gateway.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// SIGTERM while calls hang at the platform, with a
// platform.timeout far longer than shutdownGrace. The process must answer them and exit 0
// within the drain, the grace that follows it and a moment (in Kubernetes, what comes
// later is a SIGKILL), and a request arriving on a kept-alive connection meanwhile, behind
// an answer under way, is answered, with connection: close.

// Long enough for the steps between SIGTERM and the release below, which wait on conditions.
const FIRST_DRAIN_MS = 3000
const GRACE_MS = 2000
// A fixed limit (the learned one moves as it learns), below the calls started here.
const YAML = teamsYamlWith({ shutdownDrain: `${FIRST_DRAIN_MS}ms`, shutdownGrace: `${GRACE_MS}ms`, platform: { timeout: '20s', adaptive: false }, server: { connectionTimeout: '30s' } })
const PROXIED = '/api/v1/campaign/get'

describe('shutdown within shutdownDrain and shutdownGrace (gateway process)', () => {
  const { sandbox, gw } = useSandboxGatewayProcess(YAML)

  it('aborts the calls still at the platform at the end of the grace after the drain, answers them GW_SHUTTING_DOWN and exits 0', async () => {
    // Counted from here: the gateway's start probe is not one of the calls below.
    sandbox.clearRequests()
    sandbox.setFailure({ kind: 'hang', times: 3 })
    // The proxied calls below stay at the platform until released.
    sandbox.setRouteFailure(PROXIED, { kind: 'held', times: 2 })
    const hanging = [1, 2, 3].map((d) =>
      timedRequest(`${gw.url}/api/v1/report/campaigns/get?advertiserId=101&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-0${d}`, { headers: { 'x-api-key': KEYS.all } }),
    )
    await waitFor('three calls at the platform', () => sandbox.countRequests() >= 3)

    // A kept-alive connection with a proxied call in flight.
    const socket = connect(gw.port, '127.0.0.1')
    let received = ''
    socket.setEncoding('latin1').on('data', (chunk: string) => (received += chunk))
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
    socket.on('error', () => undefined)
    const body = '{"userId":101}'
    const post = `POST ${PROXIED} HTTP/1.1\r\nhost: x\r\nx-api-key: ${KEYS.all}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`
    socket.write(post)
    await waitFor('the proxied call at the platform', () => sandbox.countRequests() >= 4)

    const termAt = Date.now()
    gw.kill('SIGTERM')
    await waitFor('readiness 503: draining', async () => (await freshRequest(`${gw.url}/readyz`)).status === 503)
    // The next request on that connection, behind the answer under way, while the gateway drains.
    socket.write(post)
    await waitFor('the second proxied call at the platform', () => sandbox.countRequests((r) => r.path === PROXIED) >= 2)
    sandbox.releaseHeld()

    const answers = await Promise.all(hanging)
    const exit = await gw.exited
    await Promise.race([closed, new Promise((r) => setTimeout(r, 1000))])
    socket.destroy()

    // It exits of itself (gw.exited), cleanly; the hanging calls, which the platform never
    // answers, are answered by the end of the grace, not before it.
    expect(exit).toMatchObject({ code: 0, signal: null })
    for (const res of answers) {
      expect(res.status).toBe(503)
      expect(JSON.parse(res.body)).toEqual({ statusCode: 503, code: 'GW_SHUTTING_DOWN', error: 'Service Unavailable', message: expect.any(String) })
      expect(res.at - termAt).toBeGreaterThanOrEqual(FIRST_DRAIN_MS + GRACE_MS - 100)
    }
    // The call in flight finished; the request after it was answered, and the connection closed after it.
    const statuses = [...received.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]))
    expect(statuses).toEqual([200, 200])
    const [first, last] = received.split(/(?=HTTP\/1\.1 200)/)
    expect(first?.toLowerCase()).not.toContain('connection: close')
    expect(last?.toLowerCase()).toContain('connection: close')
    expect(last).toContain('"data"')
  })
})

// SIGTERM: the drain (shutdownDrain) before the listeners close. Readiness answers 503
// at once; both listeners go on accepting connections and answering every request as
// ever, each answer with `connection: close`; at the end of the drain they take no new
// connection, and the grace follows (above).

const DRAIN_MS = 4000
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&byDate=1&dateFrom=2026-04-01&dateTo=2026-04-07'

/** A kept-alive connection: each request written on it, and what came back. */
function keptAlive(port: number): { socket: Socket; received: () => string; closed: Promise<void>; send: (path: string) => void } {
  const socket = connect(port, '127.0.0.1')
  let received = ''
  socket.setEncoding('latin1').on('data', (chunk: string) => (received += chunk))
  socket.on('error', () => undefined)
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  return { socket, received: () => received, closed, send: (path) => socket.write(`GET ${path} HTTP/1.1\r\nhost: x\r\nx-api-key: ${KEYS.all}\r\n\r\n`) }
}

describe('the drain on SIGTERM (gateway process)', () => {
  const { gw } = useSandboxGatewayProcess(teamsYamlWith({ shutdownDrain: `${DRAIN_MS}ms`, shutdownGrace: '2s' }))

  it('answers readiness 503 at once, takes and answers new connections with connection: close for the drain, then refuses them and exits 0', async () => {
    // A copy in memory, and a connection kept alive after one answer (as a balancer keeps them).
    expect((await freshRequest(`${gw.url}${REPORT}`, { 'x-api-key': KEYS.all })).status).toBe(200)
    const kept = keptAlive(gw.port)
    kept.send(REPORT)
    await waitFor('the first answer on the kept-alive connection', () => /"data"/.test(kept.received()))

    gw.kill('SIGTERM')
    // Readiness first, on both listeners; the process still answers it.
    await waitFor('readiness 503 on the admin listener', async () => (await freshRequest(`${gw.adminUrl}/readyz`)).status === 503)
    const ready = await Promise.all([freshRequest(`${gw.url}/readyz`), freshRequest(`${gw.adminUrl}/readyz`)])
    expect(ready.map((r) => r.status)).toEqual([503, 503])

    // New connections are taken and answered as ever (a hit, health, the admin listener's health), each closed after its answer.
    const fresh = await Promise.all([
      freshRequest(`${gw.url}${REPORT}`, { 'x-api-key': KEYS.all }),
      freshRequest(`${gw.url}/healthz`),
      freshRequest(`${gw.adminUrl}/healthz`),
    ])
    expect(fresh.map((r) => [r.status, r.headers.connection])).toEqual([
      [200, 'close'],
      [200, 'close'],
      [200, 'close'],
    ])
    expect(fresh[0]?.headers['x-cache']).toBe('HIT')

    // The kept-alive connection's next request is answered, and the connection closed after it.
    kept.send(REPORT)
    await kept.closed
    const answers = kept.received().split(/(?=HTTP\/1\.1 )/)
    expect(answers.map((a) => a.slice(0, 12))).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200'])
    expect(answers[1]?.toLowerCase()).toContain('connection: close')
    expect(gw.child.exitCode).toBeNull()

    // At the end of the drain: no new connection on either listener, and the process exits 0.
    await waitFor('the listeners to refuse connections', async () => (await connectionRefused(gw.port)) && (await connectionRefused(Number(new URL(gw.adminUrl).port))), testTimeLeft(), 50)
    expect(await gw.exited).toMatchObject({ code: 0, signal: null })
    expect(gw.output()).not.toMatch(/GW_SHUTTING_DOWN/)
  }, 30_000)
})

// SIGINT (Ctrl-C, a process manager's stop) drains as SIGTERM does: a balancer that has not
// yet taken the replica out loses no request. The drain here is longer than the test, so the
// process exits only because the second SIGINT ends it.
describe('the drain on SIGINT (gateway process)', () => {
  const { gw } = useSandboxGatewayProcess(teamsYamlWith({ shutdownDrain: '10m', shutdownGrace: '2s' }))

  it('answers every request sent while it drains, with connection: close; a second SIGINT ends the drain and it exits 0', async () => {
    expect((await freshRequest(`${gw.url}${REPORT}`, { 'x-api-key': KEYS.all })).status).toBe(200)

    gw.kill('SIGINT')
    // The stop has begun once readiness is no longer 200: 503 while it drains, no answer once the listeners closed.
    await waitFor('the stop to begin', async () => (await freshRequest(`${gw.adminUrl}/readyz`)).status !== 200)
    const sent = [
      ...[1, 2, 3, 4, 5].map(() => freshRequest(`${gw.url}${REPORT}`, { 'x-api-key': KEYS.all })),
      freshRequest(`${gw.url}/healthz`),
      freshRequest(`${gw.adminUrl}/healthz`),
      freshRequest(`${gw.adminUrl}/readyz`),
    ]
    const answered = (await Promise.all(sent)).map((a) => [a.status, a.headers.connection ?? a.error])
    expect(answered).toEqual([...Array(7).fill([200, 'close']), [503, 'close']])

    gw.kill('SIGINT')
    await waitFor('the listeners to refuse connections', async () => (await connectionRefused(gw.port)) && (await connectionRefused(Number(new URL(gw.adminUrl).port))), testTimeLeft(), 50)
    expect(await gw.exited).toMatchObject({ code: 0, signal: null })
  }, 30_000)
})
