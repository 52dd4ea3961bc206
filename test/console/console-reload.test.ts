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
// page shows the gateway's refusal, each problem apart with its file and line, while the
// running teams keep answering. A problem's text is the page's text, never its markup.

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

  /** Asks for a reload and confirms it. */
  const reload = async () => {
    await page.click('#reload')
    await page.waitForSelector('#confirm[open]')
    await page.click('#confirm-yes')
  }
  /** The refusal's problems as the page lists them, each item's text. */
  const problems = () => page.$$eval('#action-result li', (items) => items.map((li) => li.textContent))

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
    expect(await text('#action-result')).toMatch(/^Refused: the new configuration was refused, the running teams stay: 1 problem\n/)
    expect(await problems()).toEqual([`line 3 of CONFIG_FILE (${file}): teams.growth.keys: must be a list of sha256:<hex> API key hashes or {hash, id, createdAt, expiresAt, successor, graceUntil, lineage, replaces} entries`])
    await page.screenshot({ path: `${ARTIFACTS}console-reload-refused.png`, fullPage: true })

    const res = await fetch(`${gw.url}${REPORT}`, { headers: { 'x-api-key': GROWTH_KEY } })
    await res.arrayBuffer()
    expect(res.status).toBe(200)
  })

  it('lists each problem with its file and line, a team name of markup as text, and clears the list at the next answer', async () => {
    // Two problems at lines 4 and 6; the second echoes the team name, markup that must stay text.
    writeFileSync(
      file,
      [
        'teams:',
        '  growth:',
        '    keys:',
        `      - { hash: "${hashApiKey(GROWTH_KEY)}", id: k1, successor: k1 }`,
        '    advertisers: [101]',
        '  "<img src=x onerror=alert(1)>":',
        `    keys: ["${hashApiKey(GROWTH_KEY)}"]`,
        '    advertisers: [102]',
        '',
      ].join('\n'),
    )
    await reload()
    await page.waitForFunction(`document.querySelectorAll('#action-result li').length === 2`, { timeout: 10_000 })
    expect(await text('#action-result')).toMatch(/^Refused: the new configuration was refused, the running teams stay: 2 problems\n/)
    expect(await problems()).toEqual([
      `line 4 of CONFIG_FILE (${file}): teams.growth.keys.0.successor: k1 is this key itself; name the key that replaces it`,
      `line 6 of CONFIG_FILE (${file}): teams: "<img src=x onerror=alert(1)>" is not a valid team name (letters, digits, _ . - only, 64 at most, not . or ..)`,
    ])
    expect(await page.$$('#action-result img')).toHaveLength(0)
    await page.screenshot({ path: `${ARTIFACTS}console-reload-problems.png`, fullPage: true })

    // The file fixed: the next reload's answer replaces the list.
    writeFileSync(file, YAML)
    await reload()
    await shows('action-result', 'Teams reloaded')
    expect(await problems()).toEqual([])
  })

  it('says which changed settings wait for the next restart, the teams the same', async () => {
    writeFileSync(file, `platform: { seatLease: 3s }\n${YAML}`)
    await reload()
    await shows('action-result', 'next restart')
    expect(await text('#action-result')).toBe('Teams reloaded: the teams have not changed. These settings changed and take effect at the next restart: platform.seatLease.')
    writeFileSync(file, YAML)
    await reload()
    await shows('action-result', 'the file has not changed')
  })
})
