import { request } from 'node:http'
import { describe, expect, it } from 'vitest'
import { ADMIN_TOKEN, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'
import { freshAddress } from '../helpers/admin-addresses.js'

// The console's audit view keeps the last 50 teams' writes apart from the last 50 other
// audit lines, so that a team writing often pushes out no operator's line. The refused
// admin calls were among those other lines: a viewer's token sending 50 changes (each a
// 403 and an audit line `admin-auth forbidden`), or a caller with no token at all calling
// from 50 addresses (each address's first refusal a line; one address alone makes a line
// each 10 s), pushed out every operator's purge, reload, token change and log-level change
// from GET /admin/audit and the console's Audit section.

const VIEWER_TOKEN = 'attack-viewer-token-0123456789abcdef'

/** An admin call over HTTP to the admin listener at `port`, from `localAddress`. */
function call(port: number, method: string, path: string, headers: Record<string, string>, localAddress = '127.0.0.1'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers, localAddress }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (body += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('refused admin calls flooding the audit trail', () => {
  const sg = useAttackGateway({ env: { ADMIN_VIEWER_TOKEN: VIEWER_TOKEN } })
  let port = 0
  const admin = async () => {
    if (port === 0) {
      // Any free port (ATTACK_ADMIN_PORT names one where a run must keep to a range of its own).
      await sg.gw.admin.listen({ host: '127.0.0.1', port: Number(process.env.ATTACK_ADMIN_PORT ?? 0) })
      port = (sg.gw.admin.server.address() as { port: number }).port
    }
    return port
  }
  const audit = async () => {
    const res = await call(await admin(), 'GET', '/admin/audit', { authorization: `Bearer ${ADMIN_TOKEN}` })
    expect(res.status).toBe(200)
    return (JSON.parse(res.body) as { lines: Record<string, unknown>[] }).lines
  }
  const purge = async (advertiserId: number) => {
    const res = await call(await admin(), 'DELETE', `/admin/cache?advertiserId=${advertiserId}`, { authorization: `Bearer ${ADMIN_TOKEN}` })
    expect(res.status).toBe(200)
  }

  it('a viewer\'s token sending 60 changes pushes no operator\'s line out of the audit trail', async () => {
    await purge(101)
    for (let i = 0; i < 60; i++) {
      const res = await call(await admin(), 'DELETE', '/admin/cache', { authorization: `Bearer ${VIEWER_TOKEN}` })
      expect(res.status).toBe(403)
    }
    const lines = await audit()
    // The refusals are audited (the log has every one), and the operator's purge is still in view.
    expect(lines.filter((l) => l.action === 'admin-auth' && l.outcome === 'forbidden').length).toBeGreaterThan(0)
    expect(lines.filter((l) => l.action === 'purge' && l.advertiserId === 101)).toHaveLength(1)
  })

  it('calls without a token from 60 addresses push no operator\'s line out of the audit trail', async () => {
    await purge(102)
    for (let i = 0; i < 60; i++) {
      const res = await call(await admin(), 'GET', '/admin/status', {}, freshAddress())
      expect(res.status).toBe(401)
    }
    const lines = await audit()
    expect(lines.filter((l) => l.action === 'admin-auth' && l.outcome === 'refused').length).toBeGreaterThan(0)
    expect(lines.filter((l) => l.action === 'purge' && l.advertiserId === 102)).toHaveLength(1)
  })

  it('calls with a Host the listener does not answer to, from 60 addresses, push no operator\'s line out of the audit trail', async () => {
    await purge(103)
    for (let i = 0; i < 60; i++) {
      const res = await call(await admin(), 'GET', '/metrics', { host: 'rebound.attacker.example' }, freshAddress())
      expect(res.status).toBe(421)
    }
    const lines = await audit()
    expect(lines.filter((l) => l.action === 'admin-host' && l.outcome === 'refused').length).toBeGreaterThan(0)
    expect(lines.filter((l) => l.action === 'purge' && l.advertiserId === 103)).toHaveLength(1)
  })

  itLoggedNoSecret(sg, [VIEWER_TOKEN])
})
