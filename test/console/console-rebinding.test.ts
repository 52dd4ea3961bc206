import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'puppeteer-core'
import { buildGateway, listen, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { chromiumPath, launchChromium } from '../helpers/console-browser.js'

// DNS rebinding in the operator's browser: a page of attacker.example whose name comes to
// resolve to the admin listener's address (Chromium's --host-resolver-rules does it here)
// is of the same origin as the listener, and its scripts read what it answers. The
// listener answers it nothing: the page's requests name attacker.example in their Host.

const CHROMIUM = chromiumPath('the admin listener\'s DNS rebinding browser test')

describe.skipIf(CHROMIUM === null)('a page whose name was made to resolve to the admin listener', () => {
  let gw: TestGateway & { url: string }
  let port: number
  let browser: Browser
  let page: Page

  beforeAll(async () => {
    gw = await listen(await buildGateway(testConfig({ PLATFORM_BASE_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN: 'a-platform-token-0123456789', ADMIN_TOKEN: 'console-rebinding-admin-token-0123456789' })))
    await gw.admin.listen({ host: '127.0.0.1', port: 0 })
    port = (gw.admin.server.address() as AddressInfo).port
    browser = await launchChromium(CHROMIUM as string, ['--host-resolver-rules=MAP attacker.example 127.0.0.1'])
    page = await browser.newPage()
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await gw?.close()
  })

  it('reads neither /metrics nor /readyz nor /docs/json, by navigation or by its own script', async () => {
    const shown = await page.goto(`http://attacker.example:${port}/metrics`)
    expect(shown?.status()).toBe(421)
    expect(await shown?.text()).not.toContain('gateway_')
    const read = await page.evaluate(async () => Promise.all(['/metrics', '/readyz', '/docs/json'].map(async (path) => {
      const res = await fetch(path)
      return { path, status: res.status, body: await res.text() }
    })))
    for (const { path, status, body } of read) {
      expect(status, path).toBe(421)
      expect(JSON.parse(body), path).toMatchObject({ code: 'GW_ADMIN_HOST' })
    }
  }, 30_000)

  it('answers the operator at 127.0.0.1 and localhost', async () => {
    for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`]) {
      const res = await page.goto(`${origin}/metrics`)
      expect(res?.status(), origin).toBe(200)
      expect(await res?.text(), origin).toContain('gateway_')
    }
  }, 30_000)
})
