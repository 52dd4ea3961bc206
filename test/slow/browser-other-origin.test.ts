/**
 * A page of another origin calling the gateway from Chromium with fetch(): the gateway
 * sends no CORS headers (docs/contract.md, "Calling the proxy listener"; the client
 * package's README, "In a browser"), so the browser lets the page read nothing, neither
 * a report nor a refusal, and a call with a key (not a CORS-safelisted header) is never
 * sent: its preflight, an OPTIONS the gateway answers itself, is all that leaves the
 * browser, and nothing reaches the platform; so with report jobs (asked, waited for, read,
 * cancelled). The same page served from the gateway's own
 * origin (behind one ingress) is test/slow/client-package.test.ts's.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/build-gateway.js'
import { chromiumPath, launchChromium } from '../helpers/console-browser.js'
import { useSandboxGateway } from '../helpers/fixtures.js'

const env = useSandboxGateway()
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-04-01&dateTo=2026-04-07'

describe('a page of another origin', () => {
  it('reads nothing of the gateway: a call with a key stops at its preflight, a refusal is unreadable, and nothing reaches the platform', async (ctx) => {
    const chromium = chromiumPath('a page of another origin calling the gateway')
    if (chromium === null) return ctx.skip()
    const app: Server = createServer((_req, res) => void res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>app</title>'))
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve))
    const browser = await launchChromium(chromium)
    try {
      const page = await browser.newPage()
      await page.goto(`http://127.0.0.1:${(app.address() as AddressInfo).port}/`)
      const before = env.callerRequests().length
      const outcomes = await page.evaluate(async (url: string, origin: string, key: string) => {
        const attempt = (init: RequestInit, to = url) => fetch(to, init).then((res) => `read ${res.status}`, (err: Error) => err.name)
        const job = `${origin}/api/v1/jobs/0mx40zbyc0001Nv0ZuPzNajELtOO3`
        return {
          withKey: await attempt({ headers: { 'x-api-key': key } }),
          withBearer: await attempt({ headers: { authorization: `Bearer ${key}` } }),
          withCredentials: await attempt({ headers: { 'x-api-key': key }, credentials: 'include' }),
          refusal: await attempt({}),
          // Report jobs: asked, their status waited for, their result, their cancel, a refusal.
          jobAsked: await attempt({ headers: { 'x-api-key': key, prefer: 'respond-async' }, redirect: 'follow' }),
          jobStatus: await attempt({ headers: { 'x-api-key': key } }, `${job}?wait=5`),
          jobResult: await attempt({ headers: { 'x-api-key': key } }, `${job}/result`),
          jobCancel: await attempt({ method: 'DELETE', headers: { 'x-api-key': key } }, job),
          jobRefusal: await attempt({}, job),
        }
      }, `${env.url}${REPORT}`, env.url, KEYS.all)
      expect(outcomes).toEqual({ withKey: 'TypeError', withBearer: 'TypeError', withCredentials: 'TypeError', refusal: 'TypeError', jobAsked: 'TypeError', jobStatus: 'TypeError', jobResult: 'TypeError', jobCancel: 'TypeError', jobRefusal: 'TypeError' })
      expect(env.callerRequests().slice(before)).toEqual([])
    } finally {
      await browser.close()
      await new Promise((resolve) => app.close(resolve).closeAllConnections())
    }
    // The preflight the browser sent, as the gateway answers it: 204 with allow, no access-control-* header.
    const preflight = await fetch(`${env.url}${REPORT}`, { method: 'OPTIONS', headers: { origin: 'http://127.0.0.1:1', 'access-control-request-method': 'GET', 'access-control-request-headers': 'x-api-key' } })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('allow')).toContain('GET')
    expect([...preflight.headers.keys()].filter((h) => h.startsWith('access-control-'))).toEqual([])
    const jobPreflight = await fetch(`${env.url}/api/v1/jobs/0mx40zbyc0001Nv0ZuPzNajELtOO3`, { method: 'OPTIONS', headers: { origin: 'http://127.0.0.1:1', 'access-control-request-method': 'DELETE', 'access-control-request-headers': 'x-api-key' } })
    expect([jobPreflight.status, jobPreflight.headers.get('allow')]).toEqual([204, 'GET, HEAD, DELETE, OPTIONS'])
    expect([...jobPreflight.headers.keys()].filter((h) => h.startsWith('access-control-'))).toEqual([])
  }, 60_000)
})
