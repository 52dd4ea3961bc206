import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'puppeteer-core'
import { startSandbox, type Sandbox } from '../../src/sandbox/sandbox.js'
import { hashApiKey } from '../../src/access/api-keys.js'
import { loadConfig } from '../../src/config.js'
import { buildGateway, listen, sandboxLoginEnv, type TestGateway } from '../helpers/build-gateway.js'
import { ARTIFACTS, chromiumPath, CONSOLE_SCRIPTS as SCRIPTS, consoleOf } from '../helpers/console-browser.js'

// The console's reload where a reload is available (the teams come from CONFIG_FILE) and the
// file stops validating after the start: the button is on, the operator confirms, and the
// page shows the gateway's refusal in its words while the running teams keep answering.

const CHROMIUM = chromiumPath('the console reload test')

const ADMIN_TOKEN = 'console-reload-admin-token-0123456789ab'
const GROWTH_KEY = 'rgw_test_console_reload_growth_key_0000000000'
const YAML = `
teams:
  growth:
    keys: ["${hashApiKey(GROWTH_KEY)}"]
    advertisers: [101]
`
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-07'

describe.skipIf(CHROMIUM === null)('the console reloads the teams from a file that no longer validates', () => {
  const dir = mkdtempSync(join(tmpdir(), 'console-reload-'))
  const file = join(dir, 'config.yaml')
  let sandbox: Sandbox
  let gw: TestGateway & { url: string }
  let adminUrl: string
  let browser: Browser
  let page: Page

  beforeAll(async () => {
    writeFileSync(file, YAML)
    sandbox = await startSandbox()
    const env = { CONFIG_FILE: file, PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), ADMIN_TOKEN, LOG_LEVEL: 'info' }
    gw = await listen(await buildGateway(loadConfig({ env }), { configSource: { env }, consoleScriptsDir: SCRIPTS }))
    ;({ adminUrl, browser, page } = await consoleOf(gw, CHROMIUM as string, []))
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await gw?.close()
    await sandbox?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const text = (selector: string) => page.$eval(selector, (node) => (node as unknown as { innerText: string }).innerText)
  const shows = (id: string, start: string) => page.waitForFunction(`document.getElementById(${JSON.stringify(id)})?.textContent?.includes(${JSON.stringify(start)})`, { timeout: 10_000 })

  it('offers the reload, and shows the refusal when the file does not validate; the running teams stay', async () => {
    await page.goto(`${adminUrl}/console`, { waitUntil: 'networkidle0' })
    await page.type('#token', ADMIN_TOKEN)
    await page.keyboard.press('Enter')
    await shows('teams', 'growth')
    expect(await page.$eval('#reload', (n) => (n as unknown as { disabled: boolean }).disabled)).toBe(false)
    expect(await text('#reload-note')).toBe('')

    writeFileSync(file, 'teams:\n  growth:\n    keys: not-a-list\n    advertisers: [101]\n')
    await page.click('#reload')
    await page.waitForSelector('#confirm[open]')
    expect(await text('#confirm-text')).toMatch(/A file that does not validate is refused and the running teams stay/)
    await page.click('#confirm-yes')
    await shows('action-result', 'Refused: ')
    expect(await text('#action-result')).toMatch(/^Refused: the new configuration was refused, the running teams stay: CONFIG_FILE: teams\.growth\.keys: must be a list/)
    await page.screenshot({ path: `${ARTIFACTS}console-reload-refused.png`, fullPage: true })

    const res = await fetch(`${gw.url}${REPORT}`, { headers: { 'x-api-key': GROWTH_KEY } })
    await res.arrayBuffer()
    expect(res.status).toBe(200)
  })
})
