import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'puppeteer-core'
import { startSandbox, type Sandbox } from '../../src/sandbox/sandbox.js'
import { hashApiKey } from '../../src/access/api-keys.js'
import { buildGateway, listen, sandboxLoginEnv, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { ARTIFACTS, chromiumPath, CONSOLE_SCRIPTS as SCRIPTS, consoleOf } from '../helpers/console-browser.js'
import { testTimeLeft } from '../helpers/wait.js'

const CHROMIUM = chromiumPath('the console browser test')

const ADMIN_TOKEN = 'console-admin-token-0123456789abcdef'
const VIEWER_TOKEN = 'console-viewer-token-0123456789abcdef'
const GROWTH_KEY = 'rgw_test_console_growth_key_00000000000000000'
const ANALYTICS_KEY = 'rgw_test_console_analytics_key_000000000000000'
const SOON = new Date(Date.now() + 5 * 86_400_000).toISOString()
const ANALYTICS_OLD_KEY = 'rgw_test_console_analytics_old_key_00000000000'
// A rotation under way: analytics-2025 works until GRACE, then analytics-2026 alone.
const GRACE = new Date(Date.now() + 3 * 86_400_000).toISOString()
const YAML = `
teams:
  growth:
    keys: ["${hashApiKey(GROWTH_KEY)}"]
    advertisers: [101, 102]
    rateLimit: { max: 100, window: 1m }
  analytics:
    keys:
      - { hash: "${hashApiKey(ANALYTICS_OLD_KEY)}", id: analytics-2025, successor: analytics-2026, graceUntil: "${GRACE}" }
      - { hash: "${hashApiKey(ANALYTICS_KEY)}", id: analytics-2026, expiresAt: "${SOON}", lineage: analytics-2025, replaces: analytics-2025 }
    advertisers: ["*"]
  retired:
    keys: []
    advertisers: [103]
`
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-07'

describe.skipIf(CHROMIUM === null)('the operations console in a headless browser', () => {
  let sandbox: Sandbox
  let gw: TestGateway & { url: string }
  let adminUrl: string
  let browser: Browser
  let page: Page
  const requested: string[] = []

  beforeAll(async () => {
    sandbox = await startSandbox()
    const config = testConfig({ PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), ADMIN_TOKEN, ADMIN_VIEWER_TOKEN: VIEWER_TOKEN }, YAML)
    gw = await listen(await buildGateway(config, { consoleScriptsDir: SCRIPTS }))
    // Keys a reload removed: one of a running team, one of a team removed whole.
    const removed = { lineage: 'growth-2025', replaces: null, successor: null, graceUntil: null, createdAt: null, expiresAt: null }
    await gw.keyUse.keysChanged({ removed: [{ ...removed, team: 'growth', id: 'growth-2025' }, { ...removed, team: 'legacy', id: 'legacy-1', lineage: 'legacy-1' }], added: [] })
    ;({ adminUrl, browser, page } = await consoleOf(gw, CHROMIUM as string, requested))
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await gw?.close()
    await sandbox?.close()
  })

  const report = async () => {
    const res = await fetch(`${gw.url}${REPORT}`, { headers: { 'x-api-key': GROWTH_KEY } })
    await res.arrayBuffer()
    expect(res.status).toBe(200)
    return res.headers.get('x-cache')
  }
  // Page-side code is given as strings or untyped callbacks: this file has node's types, not the DOM's.
  const text = (selector: string) => page.$eval(selector, (node) => (node as unknown as { innerText: string }).innerText)
  // Bounded by what is left of the test's timeout (helpers/wait.ts): a loaded machine shows it later, not never.
  const until = (expression: string) => page.waitForFunction(expression, { timeout: testTimeLeft() })
  const shows = (id: string, start: string) => until(`document.getElementById(${JSON.stringify(id)})?.textContent?.includes(${JSON.stringify(start)})`)
  const visible = (selector: string) => page.$eval(selector, (node) => node.checkVisibility())
  // A button of a section a refresh (every 5 s) may replace, when its row changed: found and
  // clicked within one task of the page, which no refresh can split. page.click's steps (find,
  // scroll, box, mouse down, mouse up) and page.$eval's (find, then call) are separate round
  // trips, and a refresh landing between them that replaces the button leaves "Node is detached
  // from document", or a click on the detached button that reaches no listener.
  const press = (selector: string) => page.evaluate(`document.querySelector(${JSON.stringify(selector)}).click()`)

  it('serves the page with a strict policy and no data, and asks for the token', async () => {
    const res = await page.goto(`${adminUrl}/console`, { waitUntil: 'networkidle0' })
    const headers = res?.headers() ?? {}
    expect(headers['content-security-policy']).toContain("default-src 'self'")
    expect(headers['content-security-policy']).toContain("connect-src 'self'")
    expect(headers['content-security-policy']).not.toContain('unsafe-inline')
    expect(headers['x-frame-options']).toBe('DENY')
    expect(headers['cache-control']).toBe('no-store')
    expect(await visible('#sign-in')).toBe(true)
    expect(await visible('#data')).toBe(false)
    // Every control is named for a screen reader.
    const unnamed = await page.$$eval('input, button', (nodes) =>
      (nodes as unknown as { tagName: string; labels?: { length: number }; textContent: string; outerHTML: string }[])
        .filter((n) => (n.tagName === 'INPUT' ? n.labels?.length === 0 : !n.textContent.trim()))
        .map((n) => n.outerHTML),
    )
    expect(unnamed).toEqual([])
  })

  it('a wrong token shows a clear message and no data', async () => {
    await page.type('#token', 'not-the-admin-token-at-all-000')
    await page.keyboard.press('Enter')
    await until("!document.getElementById('error').hidden")
    expect(await text('#error')).toMatch(/admin token was refused \(401\)/)
    expect(await visible('#data')).toBe(false)
    expect(await page.$$('#credentials tr')).toHaveLength(0)
    expect(await page.evaluate('sessionStorage.length')).toBe(0)
  })

  it('with the admin token: the credential fingerprint, both teams, the key about to expire', async () => {
    const fingerprint = gw.tokens.get('default').current()?.fingerprint as string
    await page.type('#token', ADMIN_TOKEN)
    await page.keyboard.press('Enter')
    await shows('credentials', fingerprint)
    expect(await visible('#error')).toBe(false)
    expect(await visible('#sign-in')).toBe(false)
    const teams = await text('#teams')
    expect(teams).toContain('growth')
    expect(teams).toContain('analytics')
    expect(teams).toMatch(/analytics-2026\s+[45] days left/)
    expect(await page.$eval('#teams li[data-key="analytics-2026"] .mark.soon', (n) => n.textContent)).toMatch(/days left/)
    // A team whose keys were all revoked says so, rather than an empty cell.
    expect(teams).toMatch(/retired[\s\S]*none: the team cannot call/)
    expect(await text('#redis')).toContain('not configured')
    // The limit in force, learned, with its ceiling, the knee and what the limit rule does in
    // words (at a fresh start: doubling while calls wait); teams without ceilings show none.
    expect(await text('#governors')).toMatch(/\d+, learned \(ceiling 64\); knee \d+, (starting|measuring|probing|at the knee|testing|halved)/)
    expect(await text('#governors')).not.toContain('null')
    // The token is in this tab's sessionStorage only: no cookie, not in the URL.
    expect(await page.evaluate('Object.values(sessionStorage)')).toEqual([ADMIN_TOKEN])
    expect((await browser.cookies()).length).toBe(0)
    expect(page.url()).toBe(`${adminUrl}/console`)
    const body = await text('body')
    expect(body).not.toContain(ADMIN_TOKEN)
  })

  it('purges one advertiser after a confirmation naming it: the next report is a MISS', async () => {
    expect(await report()).toBe('MISS')
    expect(await report()).toBe('HIT')
    // Escape cancels a confirmation: nothing is dropped.
    await page.click('#purge-all')
    await page.waitForSelector('#confirm[open]')
    expect(await text('#confirm-text')).toMatch(/EVERY cached report/)
    await page.keyboard.press('Escape')
    await shows('action-result', 'Cancelled')
    expect(await report()).toBe('HIT')

    await page.type('#advertiser', '101')
    await page.click('#purge-one button[type=submit]')
    await page.waitForSelector('#confirm[open]')
    expect(await text('#confirm-text')).toMatch(/every cached report of advertiser 101/)
    await page.click('#confirm-yes')
    await shows('action-result', 'Purged advertiser 101')
    expect(await report()).toBe('MISS')
    // The purge is audited like any admin call, and the console lists it.
    await shows('audit', 'report cache purged')
    expect(await text('#audit')).toMatch(/by admin/)
  })

  it('shows each key\'s life in the teams table: last used, requests in the last hour', async () => {
    const growthKey = hashApiKey(GROWTH_KEY).slice(7, 19)
    await until(`/last used just now · [1-9]\\d* requests? in the last hour/.test(document.querySelector('#teams li[data-key="${growthKey}"]')?.textContent ?? '')`)
    expect(await text(`#teams li[data-key="analytics-2026"]`)).toMatch(/last used never · 0 requests in the last hour/)
  })

  it('shows each team\'s platform-seconds of the day beside its platform calls', async () => {
    // growth's reports above were two misses: their platform time is in its row.
    await until(`Number.parseFloat(document.querySelector('#teams td[data-platform-seconds="growth"]')?.textContent ?? '0') > 0`)
    expect(await text('#teams td[data-platform-seconds="growth"]')).toMatch(/^\d+\.\d{3} s$/)
    expect(await text('#teams td[data-platform-seconds="analytics"]')).toBe('0.000 s')
    expect(await text('#teams thead')).toContain('Platform-seconds')
  })

  it('marks a key in its grace with its successor and the end of its grace, and lists removed keys with their use, a removed team\'s too', async () => {
    const rotated = await text('#teams li[data-key="analytics-2025"]')
    expect(rotated).toContain(`replaced by analytics-2026, works until ${GRACE.slice(0, 16).replace('T', ' ')} UTC`)
    expect(await page.$eval('#teams li[data-key="analytics-2025"] .mark.soon', (n) => n.textContent)).toMatch(/^replaced by analytics-2026/)
    expect(await text('#teams li[data-key="analytics-2026"]')).not.toContain('replaced')
    const removed = await text('#teams li.removed[data-key="growth-2025"]')
    expect(removed).toMatch(/removed just now/)
    expect(removed).toMatch(/last used never · 0 requests in the last hour/)
    expect(await text('#teams')).toMatch(/legacy \(removed\)[\s\S]*legacy-1[\s\S]*removed just now/)
  })

  it('looks a report up by any spelling of its URL, and purges that one report after a confirmation', async () => {
    expect(await report()).toBe('HIT')
    await page.type('#lookup-url', '/api/v1/report/campaigns/get/?dateTo=2026-01-07&byDate=true&dateFrom=2026-01-01&advertiserId=0101')
    await page.click('#lookup button[type=submit]')
    await shows('lookup-result', 'Cached as')
    const found = await text('#lookup-result')
    expect(found).toContain(REPORT)
    expect(found).toMatch(/this replica's memory \(L1\)/)
    expect(found).toMatch(/for team growth by replica/)
    expect(await visible('#purge-report')).toBe(true)
    await page.click('#purge-report')
    await page.waitForSelector('#confirm[open]')
    expect(await text('#confirm-text')).toContain(`Drop the cached copies of ${REPORT}`)
    await page.click('#confirm-yes')
    await shows('action-result', `Purged ${REPORT}: 1 entry dropped.`)
    expect(await report()).toBe('MISS')
    await page.$eval('#lookup-url', (node) => void ((node as unknown as { value: string }).value = ''))
    await page.type('#lookup-url', '/api/v1/report/campaigns/get?advertiserId=102&dateFrom=2026-01-01&dateTo=2026-01-07')
    await page.click('#lookup button[type=submit]')
    await shows('lookup-result', 'Not cached')
    expect(await visible('#purge-report')).toBe(false)
  })

  it('shows the configuration in force with the source of each setting, secrets as fingerprints, and sets the log level', async () => {
    await shows('config', 'platform.baseUrl')
    expect(await text('#config-summary')).toMatch(/^The \d+ settings in force \(\d+ not the default\); show them$/)
    await page.click('#config-summary')
    const config = await text('#config')
    expect(config).toMatch(/platform\.baseUrl\s+http:\/\/127\.0\.0\.1:\d+\s+environment\s+PLATFORM_BASE_URL/)
    expect(config).toMatch(/cache\.ttl\.recent\s+\S+\s+default\s+config\/default\.yaml/)
    expect(config).toMatch(/platform\.password\s+secret, fingerprint [0-9a-f]{12}\s+environment\s+PLATFORM_PASSWORD/)
    expect(config).not.toContain(sandbox.credentials.password)
    await page.select('#log-level-value', 'debug')
    await page.click('#log-level button[type=submit]')
    await page.waitForSelector('#confirm[open]')
    expect(await text('#confirm-text')).toMatch(/Set the log level to debug on every replica/)
    await page.click('#confirm-yes')
    await shows('action-result', 'Log level debug set on every replica (this replica had info)')
    expect(gw.log.level).toBe('debug')
    await shows('config', 'PUT /admin/log-level by admin')
    gw.log.level = 'info'
  })

  it('keeps the keyboard focus on a credential\'s button across refreshes', async () => {
    // Focused within one task of the page: page.focus finds, then focuses, and a refresh between them could split it.
    await page.waitForSelector('button[data-relogin="default"]', { timeout: testTimeLeft() })
    await page.evaluate(`document.querySelector('button[data-relogin="default"]').focus()`)
    expect(await page.evaluate('document.activeElement?.dataset?.relogin ?? null')).toBe('default')
    const statusCalls = () => requested.filter((url) => url === `${adminUrl}/admin/status`).length
    const calls = statusCalls()
    // Two refreshes drawn: the instant of "Updated" is each refresh's answer, set after its sections.
    for (let drawn = 0; drawn < 2; drawn++) {
      const shown = await page.$eval('#updated time', (node) => node.getAttribute('datetime'))
      await until(`document.querySelector('#updated time')?.getAttribute('datetime') !== ${JSON.stringify(shown)}`)
    }
    expect(statusCalls()).toBeGreaterThanOrEqual(calls + 2)
    expect(await page.evaluate('document.activeElement?.dataset?.relogin ?? null')).toBe('default')
  }, 60_000)

  it('logs in again for the password credential after a confirmation naming it', async () => {
    const before = gw.tokens.get('default').current()?.fingerprint as string
    await press('button[data-relogin="default"]')
    await page.waitForSelector('#confirm[open]')
    expect(await text('#confirm-text')).toMatch(/Log in to the platform again for credential default/)
    await page.click('#confirm-yes')
    await shows('action-result', 'Logged in again for default')
    const after = gw.tokens.get('default').current()?.fingerprint as string
    expect(after).not.toBe(before)
    expect(await text('#action-result')).toContain(after)
    await shows('credentials', after)
  })

  it('offers no reload when the teams come from no file (as in demo mode): the button is off and says why', async () => {
    // This gateway reads its teams from no file (neither CONFIG_FILE nor TEAMS_FILE in its environment): a reload could only be refused.
    await shows('reload-note', 'Reloading the teams is off: the teams come from no file (neither CONFIG_FILE nor TEAMS_FILE is set).')
    expect(await page.$eval('#reload', (n) => (n as unknown as { disabled: boolean }).disabled)).toBe(true)
    expect(await page.$eval('#reload', (n) => n.getAttribute('aria-describedby'))).toBe('reload-note')
    await page.click('#reload')
    expect(await page.$('#confirm[open]')).toBeNull()
    expect(await text('#action-result')).not.toMatch(/Refused/)
  })

  it('is readable at 1280 px and on a phone, and asks nothing of any other origin', async () => {
    await shows('cache', 'Hit ratio')
    await page.screenshot({ path: `${ARTIFACTS}console.png`, fullPage: true })
    // A change of isMobile reloads the page (puppeteer's setViewport): its data comes back with its next refresh.
    await page.setViewport({ width: 390, height: 844, isMobile: true })
    await shows('cache', 'Hit ratio')
    // Wide tables scroll in their own region; the page itself does not.
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390)
    await page.screenshot({ path: `${ARTIFACTS}console-phone.png`, fullPage: true })
    expect(requested.length).toBeGreaterThan(5)
    expect(requested.filter((url) => !url.startsWith(`${adminUrl}/`))).toEqual([])
    const html = await page.content()
    for (const secret of [ADMIN_TOKEN, gw.tokens.get('default').current()?.token as string, sandbox.credentials.password, sandbox.credentials.clientSecret]) expect(html).not.toContain(secret)
  })

  it('shows a viewer everything but no action: no purge, reload or log-in button', async () => {
    await page.setViewport({ width: 1280, height: 900 })
    await shows('cache', 'Hit ratio')
    expect(await visible('#actions')).toBe(true)
    await page.click('#sign-out')
    await page.type('#token', VIEWER_TOKEN)
    await page.keyboard.press('Enter')
    await shows('updated', 'Signed in as viewer (viewer: read only)')
    await shows('teams', 'growth')
    expect(await visible('#actions')).toBe(false)
    expect(await visible('#log-level')).toBe(false)
    expect(await page.$$('button[data-relogin]')).toHaveLength(0)
    expect(await text('#credentials')).toContain('read only')
    await page.screenshot({ path: `${ARTIFACTS}console-viewer.png`, fullPage: true })
  })
})
