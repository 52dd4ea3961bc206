// What the browser tests share: Debian's chromium, headless; for the console's, the built
// scripts, where screenshots go, and a page to open the console in.
import { spawnSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'puppeteer-core'
import { ensureBuilt } from './dist.js'
import { needTool, TOOLS } from './missing-tools.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
/** The console's scripts as `npm run build` writes them (the gateway is pointed at them). */
export const CONSOLE_SCRIPTS = `${ROOT}dist/console/`
/** Where the screenshots go (gitignored; CI keeps them as artifacts). */
export const ARTIFACTS = `${ROOT}test-artifacts/`

/**
 * The contract, as for redis-server: Debian's `chromium` from PATH (.ci/run installs
 * it); without it `what` is skipped and the run's last line says so
 * (helpers/missing-tools.ts), which with CI=true fails the run.
 */
export function chromiumPath(what: string): string | null {
  const found = spawnSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], { encoding: 'utf8' }).stdout.trim()
  return needTool(TOOLS.chromium, found !== '', what) ? found : null
}

/** A headless Chromium (`chromiumPath`'s) driven by puppeteer-core, with its HTTP cache on; `args`: more of Chromium's switches. */
export async function launchChromium(executablePath: string, args: readonly string[] = []): Promise<Browser> {
  const { launch } = await import('puppeteer-core')
  return launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', ...args] })
}

/**
 * A headless Chromium with one page of 1280 × 900 whose every request's URL is pushed to
 * `requested`; the console's scripts built and the screenshots' folder made first.
 */
export async function openConsoleBrowser(executablePath: string, requested: string[]): Promise<{ browser: Browser; page: Page }> {
  ensureBuilt(`${CONSOLE_SCRIPTS}console-page.js`)
  mkdirSync(ARTIFACTS, { recursive: true })
  const browser = await launchChromium(executablePath)
  const page = await browser.newPage()
  page.on('request', (request) => void requested.push(request.url()))
  await page.setViewport({ width: 1280, height: 900 })
  return { browser, page }
}

/** The admin listener of `gw` on a free loopback port, and a browser (`openConsoleBrowser`) to open its console. */
export async function consoleOf(gw: { admin: { listen(o: { host: string; port: number }): Promise<unknown>; server: { address(): unknown } } }, executablePath: string, requested: string[]): Promise<{ adminUrl: string; browser: Browser; page: Page }> {
  await gw.admin.listen({ host: '127.0.0.1', port: 0 })
  const adminUrl = `http://127.0.0.1:${(gw.admin.server.address() as { port: number }).port}`
  return { adminUrl, ...(await openConsoleBrowser(executablePath, requested)) }
}
