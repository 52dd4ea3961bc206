import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'puppeteer-core'
import { startSandbox, type Sandbox } from '../../src/sandbox/sandbox.js'
import { buildGateway, KEYS, listen, REPORT_PATH, TEAMS_YAML, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { ARTIFACTS, chromiumPath, CONSOLE_SCRIPTS as SCRIPTS, consoleOf } from '../helpers/console-browser.js'
import { waitFor } from '../helpers/wait.js'

// The console's view of webhook deliveries (GET /admin/jobs) in a headless Chromium: a
// team's ended report job pushed to a receiver on loopback that answers 503, then 204;
// the view shows the job, its team, the receiver's host (never the URL's path or query,
// which may carry a receiver's own token), the state, attempts, last answer and next attempt.

const CHROMIUM = chromiumPath('the console deliveries browser test')
const ADMIN_TOKEN = 'console-deliveries-admin-token-0123456789'
const SECRET = `whsec_${randomBytes(24).toString('base64')}`

describe.skipIf(CHROMIUM === null)('the console\'s webhook deliveries in a headless browser', () => {
  let sandbox: Sandbox
  let receiver: Server
  let gw: TestGateway & { url: string }
  let adminUrl: string
  let browser: Browser
  let page: Page
  let answers = 0
  const requested: string[] = []

  beforeAll(async () => {
    sandbox = await startSandbox()
    // The first attempt is answered 503: the delivery waits for its retry, 1 s later.
    receiver = createServer((req, res) => {
      req.resume()
      req.on('end', () => res.writeHead(++answers === 1 ? 503 : 204).end())
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    const url = `http://localhost:${(receiver.address() as AddressInfo).port}/hook/path-not-shown?token=receivers-own`
    const yaml = `${TEAMS_YAML.replace('    refresh: true\n', `    refresh: true\n    webhook: { url: "${url}", secret: "${SECRET}" }\n`)}jobs:\n  webhookHosts: [localhost]\n`
    gw = await listen(await buildGateway(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }, yaml), { consoleScriptsDir: SCRIPTS }))
    ;({ adminUrl, browser, page } = await consoleOf(gw, CHROMIUM as string, requested))
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await gw?.close()
    receiver?.closeAllConnections()
    await new Promise((resolve) => receiver?.close(resolve))
    await sandbox?.close()
  })

  const text = (selector: string) => page.$eval(selector, (node) => (node as unknown as { innerText: string }).innerText)

  it('shows each delivery: job, team, host only, state, attempts, last answer, next attempt', async () => {
    await page.goto(`${adminUrl}/console`, { waitUntil: 'networkidle0' })
    await page.type('#token', ADMIN_TOKEN)
    await page.keyboard.press('Enter')
    await page.waitForFunction('document.getElementById("deliveries")?.textContent?.includes("No delivery kept")', { timeout: 10_000 })

    const asked = await fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-03-31`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.status).toBe(202)
    const { id } = (await asked.json()) as { id: string }
    await waitFor('the first attempt answered 503', () => answers >= 1)
    // The page refreshes every 5 s: by then the retry (1 s after the 503) took it.
    await page.waitForFunction(`document.querySelector('#deliveries tr[data-delivery="msg_${id}"]')?.textContent?.includes('delivered')`, { timeout: 15_000 })
    const row = await text(`#deliveries tr[data-delivery="msg_${id}"]`)
    const port = (receiver.address() as AddressInfo).port
    expect(row.split('\t').map((c) => c.trim())).toEqual([id, 'all', `localhost:${port}`, 'delivered', '2', '204', '—'])
    const view = await text('#deliveries')
    expect(view).toContain('1 delivery kept, 0 pending.')
    expect(view).not.toContain('path-not-shown')
    expect(view).not.toContain('receivers-own')
    await page.$eval('#deliveries', (node) => (node as unknown as { scrollIntoView(): void }).scrollIntoView())
    await page.screenshot({ path: `${ARTIFACTS}console-deliveries.png` })
  }, 60_000)
})
