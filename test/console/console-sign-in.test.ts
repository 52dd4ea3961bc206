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

  // As the browser reads the field: a value it does not know would read as '' (autocomplete)
  // and its default. `one-time-code`: Chromium's password manager takes such a field for no
  // password, neither saving what it holds nor filling a saved one into it.
  it('the token\'s field is one no password manager saves or fills, no spell checker reads and nothing capitalizes', async () => {
    await page.goto(`${adminUrl}/console`, { waitUntil: 'networkidle0' })
    const field = await page.$eval('#token', (token) => {
      const input = token as unknown as { type: string; autocomplete: string; spellcheck: boolean; autocapitalize: string; name: string }
      return { type: input.type, autocomplete: input.autocomplete, spellcheck: input.spellcheck, autocapitalize: input.autocapitalize, name: input.name }
    })
    expect(field).toEqual({ type: 'password', autocomplete: 'one-time-code', spellcheck: false, autocapitalize: 'none', name: '' })
  }, 30_000)

  // An operator copies the token from a curl line's header: the console answered `The admin
  // token was refused (401) … Check the token`, as if the token itself were wrong.
  it('a token pasted with "Bearer " before it is refused saying so, nothing sent, and the token alone signs in', async () => {
    await page.setJavaScriptEnabled(true)
    await page.goto(`${adminUrl}/console`, { waitUntil: 'networkidle0' })
    const before = requested.length
    await page.type('#token', `Bearer ${ADMIN_TOKEN}`)
    await page.keyboard.press('Enter')
    await page.waitForSelector('#error:not([hidden])')
    expect(await page.$eval('#error', (box) => box.textContent)).toBe('Enter the admin token alone, without "Bearer " before it: the console sends it as authorization: Bearer <token> itself.')
    expect(requested.slice(before).filter((url) => url.includes('/admin/'))).toEqual([])
    expect(await page.$eval('#sign-in', (form) => (form as unknown as { hidden: boolean }).hidden)).toBe(false)
    // The whole header line, and two tokens pasted together: neither is sent.
    const pasted: [string, string][] = [
      [`authorization: Bearer ${ADMIN_TOKEN}`, 'Enter the admin token alone, without "Bearer " before it: the console sends it as authorization: Bearer <token> itself.'],
      [`${ADMIN_TOKEN} ${ADMIN_TOKEN}`, 'Enter the admin token alone: what was entered holds a space inside, which no admin token has.'],
    ]
    for (const [typed, said] of pasted) {
      await page.$eval('#error', (box) => ((box as unknown as { hidden: boolean }).hidden = true))
      await page.type('#token', typed)
      await page.keyboard.press('Enter')
      await page.waitForSelector('#error:not([hidden])')
      expect(await page.$eval('#error', (box) => box.textContent)).toBe(said)
    }
    expect(requested.slice(before).filter((url) => url.includes('/admin/'))).toEqual([])
    await page.type('#token', ADMIN_TOKEN)
    await page.keyboard.press('Enter')
    await page.waitForSelector('#signed-in:not([hidden])')
  }, 30_000)

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
