import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'puppeteer-core'
import { startSandbox, type Sandbox } from '../../src/sandbox/sandbox.js'
import { buildGateway, listen, testConfig, UPLOADER_KEY, withUploader, type TestGateway } from '../helpers/build-gateway.js'
import { rawRequest } from '../helpers/sandbox-gateway.js'
import { ARTIFACTS, chromiumPath, CONSOLE_SCRIPTS as SCRIPTS, consoleOf } from '../helpers/console-browser.js'

// The console opened by an operator after a team (holding only a key of the proxy
// listener) and an outsider reaching the admin listener planted what they could in what
// the console shows: markup and script in paths and accounts, a `javascript:` link, a
// 100 KB account, characters that turn text around or hide in it. No script of theirs
// runs (no dialog, no policy violation, no element of theirs), nothing of theirs is a
// link, the page stays as wide as the window, and no text reads other than it is.

const CHROMIUM = chromiumPath('the console injection browser test')
const ADMIN_TOKEN = 'console-injection-admin-token-0123456789'
const MARKUP = ['<img src=x onerror=alert(1)>', '"><svg onload=alert(2)>', '</script><script>alert(3)</script>', 'javascript:alert(4)', '<a href="https://attacker.example/">x</a>', '<style>*{display:none}</style>']
// U+202E turns the text after it around: "nimda yb degrup" reads "purged by admin".
const REVERSED = '\u202enimda yb degrup ehcac troper'
const HIDDEN = 'gro\u200bwth'
// An account of 100 KB; the paths below are some 12 KB (a request head's room).
const LONG = '7'.repeat(100_000)

describe.skipIf(CHROMIUM === null)('the console after a team planted markup in what it shows', () => {
  let sandbox: Sandbox
  let gw: TestGateway & { url: string }
  let adminUrl: string
  let browser: Browser
  let page: Page
  const requested: string[] = []
  const dialogs: string[] = []
  const errors: string[] = []

  beforeAll(async () => {
    sandbox = await startSandbox()
    gw = await listen(await buildGateway(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }, withUploader()), { consoleScriptsDir: SCRIPTS }))
    ;({ adminUrl, browser, page } = await consoleOf(gw, CHROMIUM as string, requested))
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message())
      void dialog.dismiss()
    })
    page.on('console', (message) => void (message.type() === 'error' && errors.push(message.text())))
    page.on('pageerror', (error) => void errors.push(String(error)))
    await page.evaluateOnNewDocument(`window.violations = []; document.addEventListener('securitypolicyviolation', (e) => window.violations.push(e.violatedDirective + ' ' + e.blockedURI))`)
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await gw?.close()
    await sandbox?.close()
  })

  const plant = async () => {
    // Write calls of a team: each is audited with its path and the accounts its body names.
    for (const account of [...MARKUP, REVERSED, HIDDEN, LONG]) {
      const res = await fetch(`${gw.url}/api/v1/campaign/update`, {
        method: 'POST',
        headers: { 'x-api-key': UPLOADER_KEY, 'content-type': 'application/json', 'user-agent': MARKUP[0] as string },
        body: JSON.stringify({ advertiserId: account }),
      })
      await res.arrayBuffer()
    }
    const proxyPort = Number(new URL(gw.url).port)
    const adminPort = Number(new URL(adminUrl).port)
    for (const path of ['/api/v1/<img src=x onerror=alert(5)>', '/api/v1/"><svg/onload=alert(6)>', `/api/v1/${'x'.repeat(12_000)}`]) {
      await rawRequest(proxyPort, `POST ${path} HTTP/1.1\r\nhost: x\r\nx-api-key: ${UPLOADER_KEY}\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}`)
      // An outsider's admin call without the token: audited with its path.
      await rawRequest(adminPort, `GET /admin${path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`)
    }
  }

  it('runs no script of the team\'s, links nowhere, stays as wide as the window and shows no hidden or reversed text', async () => {
    await plant()
    await page.goto(`${adminUrl}/console`, { waitUntil: 'networkidle0' })
    await page.type('#token', ADMIN_TOKEN)
    await page.keyboard.press('Enter')
    await page.waitForFunction('document.getElementById("audit")?.textContent?.includes("write call")', { timeout: 10_000 })
    const audit = await page.$eval('#audit', (node) => (node as unknown as { textContent: string }).textContent)
    // What was planted is on the page, as text.
    expect(audit).toContain('onerror=alert(1)')
    expect(audit).toContain('<svg onload=alert(2)>')
    // The request line holds the first 1024 characters of the path the caller chose, then how many more.
    expect(audit).toContain(`path=/api/v1/${'x'.repeat(1024 - '/api/v1/'.length)}… (+${12_008 - 1024} characters)`)
    expect(dialogs).toEqual([])
    expect(errors).toEqual([])
    expect(await page.evaluate('window.violations')).toEqual([])
    expect(await page.$$eval('#data img, #data svg, #data script, #data style, #data iframe, [onerror], [onload]', (nodes) => nodes.length)).toBe(0)
    const links = (await page.$$eval('a[href]', (nodes) => nodes.map((n) => n.getAttribute('href')))) as string[]
    expect(links.filter((href) => !href.startsWith('#') && !href.startsWith('/'))).toEqual([])
    expect(requested.filter((url) => !url.startsWith(`${adminUrl}/`))).toEqual([])
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(1280)
    // No character that turns text around or hides in it is shown as such: each is written as its code point.
    const shown = await page.$eval('body', (node) => (node as unknown as { innerText: string }).innerText)
    expect(shown).not.toMatch(/[\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/)
    expect(shown).toContain('U+202E')
    expect(shown).toContain('U+200B')
    await page.$eval('#audit', (node) => (node as unknown as { scrollIntoView(): void }).scrollIntoView())
    await page.screenshot({ path: `${ARTIFACTS}console-injection.png` })
  }, 60_000)
})
