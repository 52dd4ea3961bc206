import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'puppeteer-core'
import { buildGateway, listen, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { chromiumPath, CONSOLE_SCRIPTS as SCRIPTS, consoleOf } from '../helpers/console-browser.js'

// The admin token typed before the console's script runs (a slow network, a script that
// did not load): the sign-in form, submitted by the browser itself, must not put the
// token in the page's URL (the browser's history, the address bar, the logs of any proxy
// on the way) nor send it to any other address than the admin listener's.

const CHROMIUM = chromiumPath('the console sign-in browser test')
const ADMIN_TOKEN = 'console-sign-in-admin-token-0123456789ab'

describe.skipIf(CHROMIUM === null)('the console\'s sign-in without its script', () => {
  let gw: TestGateway & { url: string }
  let adminUrl: string
  let browser: Browser
  let page: Page
  const requested: string[] = []

  beforeAll(async () => {
    gw = await listen(await buildGateway(testConfig({ PLATFORM_BASE_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN: 'a-platform-token-0123456789', ADMIN_TOKEN }), { consoleScriptsDir: SCRIPTS }))
    ;({ adminUrl, browser, page } = await consoleOf(gw, CHROMIUM as string, requested))
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await gw?.close()
  })

  it('a token entered before the script runs is in no URL', async () => {
    await page.setJavaScriptEnabled(false)
    await page.goto(`${adminUrl}/console`, { waitUntil: 'networkidle0' })
    await page.type('#token', ADMIN_TOKEN)
    await Promise.all([page.waitForNavigation({ timeout: 10_000 }), page.keyboard.press('Enter')])
    expect(page.url()).not.toContain(ADMIN_TOKEN)
    expect(requested.filter((url) => url.includes(ADMIN_TOKEN))).toEqual([])
    expect(gw.logs.text()).not.toContain(ADMIN_TOKEN)
  }, 30_000)
})
