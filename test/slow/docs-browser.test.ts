/**
 * Swagger UI at /docs on the admin listener, in Chromium, under the policy the listener
 * sends with it (admin/page-headers.ts, DOCS_CSP): the page renders the proxy's document
 * (its title, its operations, an operation opened), and the browser reports no breach of
 * the policy (a script, a style, an image or a call it blocked) and no failed request.
 */
import type { Page } from 'puppeteer-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildGateway, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { chromiumPath, launchChromium } from '../helpers/console-browser.js'
import { DOCS_CSP } from '../../src/http/admin/page-headers.js'

const chromium = chromiumPath('Swagger UI at /docs in Chromium')

describe.skipIf(chromium === null)('Swagger UI at /docs in Chromium', () => {
  let gw: TestGateway
  let browser: Awaited<ReturnType<typeof launchChromium>>
  let page: Page
  let docsUrl = ''
  const breaches: string[] = []
  const failed: string[] = []

  beforeAll(async () => {
    gw = await buildGateway(testConfig({ PLATFORM_BASE_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN: 'docs-browser-token', ADMIN_TOKEN: 'docs-browser-admin-token-0123456789' }))
    await gw.admin.listen({ host: '127.0.0.1', port: 0 })
    docsUrl = `http://127.0.0.1:${(gw.admin.server.address() as { port: number }).port}/docs`
    browser = await launchChromium(chromium as string)
    page = await browser.newPage()
    // The page's own report of each breach of its policy, as the browser raises it.
    await page.exposeFunction('reportBreach', (breach: string) => void breaches.push(breach))
    await page.evaluateOnNewDocument(`document.addEventListener('securitypolicyviolation', (e) => reportBreach(e.effectiveDirective + ' ' + e.blockedURI))`)
    page.on('requestfailed', (request) => void failed.push(`${request.url()}: ${request.failure()?.errorText ?? ''}`))
    page.on('response', (response) => {
      if (response.status() >= 400) failed.push(`${response.url()}: ${response.status()}`)
    })
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await gw?.close()
  })

  it('renders the proxy\'s document under the policy it is sent with, with no breach of it and no failed request', async () => {
    const res = await page.goto(docsUrl, { waitUntil: 'networkidle0' })
    expect(res?.status()).toBe(200)
    expect(res?.headers()['content-security-policy']).toBe(DOCS_CSP)
    expect(res?.headers()['x-content-type-options']).toBe('nosniff')
    await page.waitForFunction(`document.querySelector('.swagger-ui .info .title')?.textContent?.includes('Report gateway')`, { timeout: 20_000 })
    const operations = await page.$$eval('.opblock', (nodes) => nodes.length)
    expect(operations).toBeGreaterThan(20)
    // An operation opened shows its parameters, and no "Try it out" (docs UI calls nothing).
    await page.click('.opblock-summary')
    await page.waitForSelector('.opblock-body', { timeout: 10_000 })
    expect(await page.$('.try-out__btn')).toBeNull()
    // No top bar: its logo is an inline SVG whose <style> the policy refuses, and its box would fetch any URL typed in.
    expect(await page.$('.topbar')).toBeNull()
    expect(breaches).toEqual([])
    expect(failed).toEqual([])
  }, 60_000)
})
