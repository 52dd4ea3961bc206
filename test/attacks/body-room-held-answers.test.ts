import { connect, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH } from '../helpers/build-gateway.js'
import { SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'
import { itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// Request bodies are held within the answers' budget (platform.bufferTotalBytes, body-room.ts),
// and a team's bodies within a quarter of it; but one team's answers may hold all of it. An
// answer that finds no room makes some: it cuts other teams' answers whose callers stopped
// reading (answer-buffer.ts). A body that found none was refused at once, 503 GW_BODY_BUDGET,
// cutting nothing. So a team that holds the budget with answers it never reads held every
// other team's calls with a body out: a campaign list (POST …/campaign/get), a POST report, a
// write. Its answers are easily held: pipelined on one connection behind a call the platform
// is slow to answer (a long report), each is received whole and waits its turn, read by no
// one. Here the writer team (101) holds them; the growth team's body-bearing reads are refused.

const BUDGET = 4 * 1024 * 1024
const yaml = `platform:\n  bufferTotalBytes: ${BUDGET}\n  readIdleTimeout: 10m\n${SANDBOX_TEAMS_YAML}`
const sg = useAttackGateway({ yaml })

const open: Socket[] = []
afterEach(() => {
  sg.sandbox.setFailure({ kind: 'none' })
  sg.sandbox.clearRouteFailures()
  sg.sandbox.releaseHeld()
  for (const socket of open.splice(0)) socket.destroy()
})

describe('one team\'s answers held on their way hold the budget', () => {
  it('another team\'s request body makes room as its answer would: the held answers of a caller that stopped reading are cut, not the body refused', async () => {
    // Four answers just short of the budget (each call's own body is held beside its answer), a fifth that fits nowhere.
    const answerBytes = Math.floor((BUDGET - 1500) / 4) - 300
    sg.sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    sg.sandbox.setFailure({ kind: 'large', bytes: answerBytes, times: 5 })
    const socket = connect(sg.port, '127.0.0.1')
    open.push(socket)
    // Read by no one.
    socket.pause()
    const list = '{"userId":101}'
    const slow = `GET ${REPORT_PATH}?advertiserId=101&dateFrom=2025-01-01&dateTo=2025-12-31 HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${KEYS.writer}\r\n\r\n`
    const held = `POST /api/v1/campaign/get HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${KEYS.writer}\r\ncontent-type: application/json\r\ncontent-length: ${list.length}\r\n\r\n${list}`
    socket.write(slow + held.repeat(5))
    const budget = sg.gw.answers.budget
    await waitFor('the writer\'s answers to hold the budget', () => budget.used > BUDGET - 2000 && sg.sandbox.requests.filter((r) => r.path === '/api/v1/campaign/get').length >= 5)
    sg.sandbox.setFailure({ kind: 'none' })

    // The growth team's campaign list, a body of 2 KB: room is made for it.
    const body = JSON.stringify({ userId: 102, note: 'x'.repeat(2048) })
    expect(body.length).toBeGreaterThan(BUDGET - budget.used)
    let last: { status: number; code?: string } = { status: 0 }
    await waitFor(
      () => `the growth team's campaign list answered (last: ${JSON.stringify(last)})`,
      async () => {
        const res = await fetch(`${sg.url}/api/v1/campaign/get`, { method: 'POST', headers: { 'x-api-key': KEYS.growth, 'content-type': 'application/json' }, body })
        last = { status: res.status, code: ((await res.json()) as { code?: string }).code }
        return res.status === 200
      },
      10_000,
      100,
    )
    expect(last).toEqual({ status: 200, code: undefined })
  })
})

itLoggedNoSecret(sg)
