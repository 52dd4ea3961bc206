import { describe, expect, it } from 'vitest'
import { KEYS, rawHttp, rawRequest } from '../helpers/sandbox-gateway.js'
import { itLoggedNoSecret, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// RFC 9110, 7.6.1: a header named in `Connection` is for one hop. The platform gets none
// of the caller's headers so named (the gateway forwards an allowlist, less those). A
// `Connection` naming a header the gateway itself reads (the key, the body's type and
// framing, the Host, cache directives and validators, `prefer`…) is refused before the
// key is read: a hop before the gateway drops such a header, the gateway would read it,
// and the two would check different calls.

const sg = useAttackGateway()
const REPORT = `/api/v1/report/campaigns/get?advertiserId=101&${REPORT_DATES}`

describe('headers named in Connection', () => {
  it('never reach the platform: each header the gateway forwards is dropped when Connection names it', async () => {
    const named = 'keep-alive, Accept-Language, USER-AGENT, accept, accept-encoding, x-foo'
    const res = await rawRequest(sg.port, rawHttp('POST', '/api/v1/campaign/get', {
      key: KEYS.growth,
      body: '{"userId":101}',
      headers: { connection: `close, ${named}`, 'content-type': 'application/json', 'accept-language': 'fr', 'user-agent': 'hop-test-agent', accept: 'text/x-hop', 'accept-encoding': 'br', 'x-foo': 'bar' },
    }))
    expect(res.status, res.text.slice(0, 300)).toBe(200)
    const [received] = sg.callerRequests()
    expect(received?.body).toBe('{"userId":101}')
    const headers = received?.headers ?? {}
    expect(headers['accept-language']).toBeUndefined()
    expect(headers['user-agent']).not.toBe('hop-test-agent')
    expect(headers.accept).not.toBe('text/x-hop')
    expect(headers['accept-encoding']).not.toBe('br')
    expect(headers['x-foo']).toBeUndefined()
  })

  it('the same headers not named are forwarded as before, accept the gateway\'s own', async () => {
    const res = await rawRequest(sg.port, rawHttp('POST', '/api/v1/campaign/get', {
      key: KEYS.growth,
      body: '{"userId":101}',
      headers: { connection: 'close', 'content-type': 'application/json', 'accept-language': 'fr', 'user-agent': 'hop-test-agent', accept: 'text/x-hop' },
    }))
    expect(res.status).toBe(200)
    const [received] = sg.callerRequests()
    // `accept` is the gateway's own (proxy.ts, ASKED_TYPE), named or not.
    expect(received?.headers).toMatchObject({ 'accept-language': 'fr', 'user-agent': 'hop-test-agent', accept: 'application/json' })
  })

  it.each(['x-api-key', 'Authorization', 'content-type', 'content-length', 'host', 'cache-control', 'prefer'])(
    'naming %s, a header the gateway reads: 400 GW_BAD_REQUEST before the key, nothing forwarded, the header hidden from neither layer',
    async (name) => {
      const sent = [
        rawHttp('POST', '/api/v1/campaign/get', { key: KEYS.growth, body: '{"userId":101}', headers: { connection: `close, ${name}`, 'content-type': 'application/json' } }),
        rawHttp('GET', REPORT, { key: KEYS.growth, headers: { connection: `keep-alive, ${name}, close` } }),
        rawHttp('GET', '/api/v1/jobs/0000000000000abcdef', { key: KEYS.growth, headers: { connection: `close,${name}` } }),
      ]
      for (const bytes of sent) {
        const res = await rawRequest(sg.port, bytes)
        expect(res.status, res.text.slice(0, 300)).toBe(400)
        const body = JSON.parse(res.body) as { code: string; message: string }
        expect(body.code).toBe('GW_BAD_REQUEST')
        expect(body.message).toBe(`connection: names ${name.toLowerCase()}, a header the gateway reads; a header named in Connection is for one hop only (RFC 9110, 7.6.1): send it without naming it there`)
        expect(res.text).not.toContain(KEYS.growth)
        expect(res.headers['www-authenticate']).toBeUndefined()
      }
      expect(sg.callerRequests()).toEqual([])
    },
  )

  it('naming it in a second Connection line: refused as in one (Node joins the lines)', async () => {
    const res = await rawRequest(sg.port, `GET ${REPORT} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\nx-api-key: ${KEYS.growth}\r\nConnection: X-API-Key\r\n\r\n`)
    expect(res.status).toBe(400)
    expect((JSON.parse(res.body) as { message: string }).message).toMatch(/^connection: names x-api-key, /)
    expect(sg.callerRequests()).toEqual([])
  })

  it('on a report read the entrance before the router answers (a URL seen before): refused too, not a HIT', async () => {
    const first = await rawRequest(sg.port, rawHttp('GET', REPORT, { key: KEYS.growth }))
    expect(first.status).toBe(200)
    const hit = await rawRequest(sg.port, rawHttp('GET', REPORT, { key: KEYS.growth }))
    expect(hit.headers['x-cache']).toBe('HIT')
    const named = await rawRequest(sg.port, rawHttp('GET', REPORT, { key: KEYS.growth, headers: { connection: 'close, x-api-key' } }))
    expect(named.status).toBe(400)
    expect(named.headers['x-cache']).toBeUndefined()
  })

  it('Connection: close, keep-alive, TE or Upgrade names no header the gateway reads: answered as ever', async () => {
    for (const connection of ['close', 'Keep-Alive, close', 'close, TE', 'close, Upgrade, HTTP2-Settings']) {
      const res = await rawRequest(sg.port, rawHttp('GET', REPORT, { key: KEYS.growth, headers: { connection } }))
      expect(res.status, connection).toBe(200)
    }
  })
})

itLoggedNoSecret(sg)
