import { afterEach, describe, expect, it } from 'vitest'
import { destroyRawConnections, rawConnection } from '../helpers/raw-connections.js'
import { itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// GET /openapi.json asks no key and answers about 270 KB. Node's parser reads every
// request of one read before it stops reading a connection whose answers wait (a 64 KB
// read holds some 1,600 of them), and each answer waits whole in the gateway until the
// caller reads the ones before it: a copy of the document each would have one caller's
// 64 KB write hold some 430 MB. The answers share one copy.

const sg = useAttackGateway()
const ASKS = 200
const DOCUMENT_BYTES = 250_000

afterEach(() => destroyRawConnections())

/** What the process holds in its heap and outside it (buffers). */
function held(): number {
  const { heapUsed, external } = process.memoryUsage()
  return heapUsed + external
}

describe('GET /openapi.json pipelined with no key, nothing read', () => {
  it('holds one copy of the document for all the answers waiting, not one each', async () => {
    // One answer first, so that the document exists before the baseline.
    const first = rawConnection(sg.port, 'GET /openapi.json HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n')
    await first.closed
    const before = held()
    const conn = rawConnection(sg.port, 'GET /openapi.json HTTP/1.1\r\nhost: x\r\n\r\n'.repeat(ASKS), { read: false, keep: 0 })
    await conn.firstData
    // Every request of the write was read in the read that began the first answer; their handlers ran since.
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve))
    expect(held() - before).toBeLessThan((ASKS * DOCUMENT_BYTES) / 4)
  })
})

itLoggedNoSecret(sg)
