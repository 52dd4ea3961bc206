import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'puppeteer-core'
import { buildGateway, listen, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { chromiumPath, CONSOLE_SCRIPTS as SCRIPTS, launchChromium } from '../helpers/console-browser.js'

// A page of another origin opens the console in a window of its own (a link "open your
// gateway's console", a pop-up) and keeps the handle window.open gives it. With that
// handle it could later send the operator's console window to a page of its own that
// looks like the console and asks for the admin token again (reverse tabnabbing), or
// tell when it is closed. The console's window belongs to its own origin alone: the
// handle reads as closed once the console is there, and sends it nowhere.

const CHROMIUM = chromiumPath('the console opener browser test')

describe.skipIf(CHROMIUM === null)('the console opened by a page of another origin', () => {
  let gw: TestGateway & { url: string }
  let consoleUrl: string
  let site: Server
  let siteUrl: string
  let browser: Browser
  let page: Page

  beforeAll(async () => {
    gw = await listen(await buildGateway(testConfig({ PLATFORM_BASE_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN: 'a-platform-token-0123456789', ADMIN_TOKEN: 'console-opener-admin-token-0123456789' }), { consoleScriptsDir: SCRIPTS }))
    await gw.admin.listen({ host: '127.0.0.1', port: 0 })
    consoleUrl = `http://127.0.0.1:${(gw.admin.server.address() as AddressInfo).port}/console`
    // The other site: another port of the same host is another origin.
    site = createServer((request, response) => response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><title>site ${request.url ?? ''}</title><p>another site</p>`))
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve))
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`
    browser = await launchChromium(CHROMIUM as string)
    page = await browser.newPage()
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await gw?.close()
    await new Promise((resolve) => site?.close(resolve))
  })

  it('keeps no handle on the console\'s window: it reads as closed, so it cannot send the console elsewhere', async () => {
    await page.goto(`${siteUrl}/`)
    await page.evaluate(`void (window.opened = window.open(${JSON.stringify(consoleUrl)}))`)
    const target = await browser.waitForTarget((t) => t.url() === consoleUrl)
    const popup = (await target.page()) as Page
    await popup.waitForFunction('document.readyState === "complete" && document.getElementById("sign-in") !== null')
    // The console's own side: no opener to reach back through.
    expect(await popup.evaluate('window.opener === null')).toBe(true)
    expect(await page.evaluate('window.opened.closed')).toBe(true)
    // Nothing reaches it through the handle: the console is still the page shown.
    expect(await page.evaluate('window.opened.length')).toBe(0)
    expect(popup.url()).toBe(consoleUrl)
  }, 30_000)
})
