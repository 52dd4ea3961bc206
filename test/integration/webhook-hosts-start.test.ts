import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ensureBuilt } from '../helpers/dist.js'
import { TEAMS_YAML } from '../helpers/build-gateway.js'

// The start (node dist/main.js, as the image and `npm start` run it) with a team's webhook
// the operator's allow-list does not hold: exit 78 and one line that says what to add and
// where (the host in jobs.webhookHosts) or what to remove, in the chart's words.

const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url))
let dir = ''
beforeAll(() => {
  ensureBuilt(MAIN)
  dir = mkdtempSync(join(tmpdir(), 'webhook-hosts-start-'))
}, 120_000)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** What the start of a gateway with config file `yaml` printed, and its exit code. */
async function start(yaml: string): Promise<{ code: number | null; lines: string[] }> {
  const file = join(dir, `config-${Math.random().toString(36).slice(2)}.yaml`)
  writeFileSync(file, yaml)
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH ?? '', PLATFORM_BASE_URL: 'https://platform.example', PLATFORM_TOKEN: 'x'.repeat(20), CONFIG_FILE: file, PORT: '0', ADMIN_PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c))
  child.stderr.setEncoding('utf8').on('data', (c: string) => (out += c))
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)))
  return { code, lines: out.split('\n').filter(Boolean) }
}

/** TEAMS_YAML with team `all` pushing to `url`, and `jobs` as given. */
const withWebhook = (url: string, jobs = ''): string =>
  `${TEAMS_YAML.replace('    refresh: true\n', `    refresh: true\n    webhook: { url: "${url}", secret: "whsec_${'A'.repeat(32)}" }\n`)}${jobs}`

describe('the start with a team webhook jobs.webhookHosts does not allow', () => {
  it('webhooks off (jobs.webhookHosts empty): exit 78, one line saying to list the host in jobs.webhookHosts or remove the webhook', async () => {
    for (const jobs of ['', 'jobs:\n  webhookHosts: []\n']) {
      const { code, lines } = await start(withWebhook('https://hooks.example.org/reports', jobs))
      expect(code, jobs).toBe(78)
      expect(lines, jobs).toHaveLength(1)
      expect(lines[0], jobs).toMatch(
        /^report-gateway: invalid configuration: teams\.all\.webhook\.url: jobs\.webhookHosts is empty: webhooks are off; list the webhook's host in jobs\.webhookHosts, or remove teams\.all\.webhook; line \d+ of CONFIG_FILE \([^)]*\)$/,
      )
    }
  }, 60_000)

  it('a host not listed: exit 78, one line naming the host and saying the same', async () => {
    const { code, lines } = await start(withWebhook('https://hooks.example.org/reports', 'jobs:\n  webhookHosts: [hooks.example.com]\n'))
    expect(code).toBe(78)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^report-gateway: invalid configuration: teams\.all\.webhook\.url: hooks\.example\.org is not in jobs\.webhookHosts; list the webhook's host in jobs\.webhookHosts, or remove teams\.all\.webhook; line \d+ of CONFIG_FILE \([^)]*\)$/)
  }, 60_000)
})
