import { Agent } from 'undici'
import { afterAll, describe, expect, it } from 'vitest'
import { PlatformClient } from '../../src/platform/client/platform-client.js'
import type { PlatformGovernors, SeatCall } from '../../src/platform/governor/platform-governors.js'
import type { Seat, SeatOutcome } from '../../src/platform/governor/seat.js'
import type { TokenProvider } from '../../src/platform/tokens/token-provider.js'
import type { TokenVerdicts } from '../../src/platform/tokens/token-verdict.js'
import type { RefusalLog } from '../../src/platform/client/refusal-log.js'
import { REPORT_PATH } from '../helpers/build-gateway.js'
import { useSandbox } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'

// A seat given in the turn its call's deadline passes (as the abort runs, before the
// queue hears of it): the call is not sent, and the seat goes back as never used.

const sandbox = useSandbox()
const dispatcher = new Agent()
afterAll(() => dispatcher.close())

describe('a seat given as its call\'s deadline passes', () => {
  it('sends nothing: the seat ends unsent (free at once, charged nothing), the caller gets GW_UPSTREAM_TIMEOUT', async () => {
    const ends: SeatOutcome[] = []
    const seat: Seat = { end: (outcome) => void ends.push(outcome) }
    // The seat is granted by the deadline's own abort, ahead of the queue's listener.
    const governors = { seat: (_credential: string, call: SeatCall) => new Promise<Seat>((resolve) => call.signal?.addEventListener('abort', () => resolve(seat), { once: true })) }
    const client = new PlatformClient({
      dispatcher,
      timeoutMs: 50,
      defaultBaseUrl: sandbox.url,
      governors: governors as unknown as PlatformGovernors,
      verdicts: {} as TokenVerdicts,
      refusals: {} as RefusalLog,
      usage: { platformCall: () => undefined, platformSpent: () => undefined },
      maxPauseMs: 60_000,
      maxDecodedBytes: 128 * 1024 * 1024,
    })
    const token = sandbox.issueToken()
    const provider = { name: 'default', credential: {}, usable: () => true, current: () => ({ token }) } as unknown as TokenProvider
    const sent = client.send(provider, { method: 'GET', url: `${REPORT_PATH}?advertiserId=101&dateFrom=2026-02-01&dateTo=2026-02-07`, requestId: 'late', read: true, team: 'growth' })
    await expect(sent).rejects.toMatchObject({ code: 'GW_UPSTREAM_TIMEOUT' })
    await waitFor('the seat to end', () => ends.length > 0)
    expect(ends).toEqual([{ kind: 'unsent' }])
    expect(sandbox.countRequests((r) => r.path === REPORT_PATH)).toBe(0)
  })
})
