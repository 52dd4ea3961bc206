import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { ensureBuilt } from '../helpers/dist.js'

// README, "Quick start": `CONFIG_FILE=teams.yaml npm start`, typed as a new user types it,
// with the slips a new user makes. npm runs a script in the package's folder whatever
// folder it was typed in, so a relative path names a file there: the start that cannot
// find it says where it looked and from where a relative path is read. A teams file with a
// mistake on one line: the start names the setting and that line.

const ROOT = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '')
let dir = ''
beforeAll(() => {
  ensureBuilt(`${ROOT}/dist/main.js`)
  dir = mkdtempSync(join(tmpdir(), 'npm-start-mistakes-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function npmStart(cwd: string, env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn('npm', ['start'], { cwd, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? ROOT, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  child.stdout.resume()
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  return { code, stderr }
}

it('a relative CONFIG_FILE that npm start, typed in a subfolder, cannot find: exit 78 naming the file it looked for and from where', async () => {
  const { code, stderr } = await npmStart(`${ROOT}/config`, { CONFIG_FILE: 'my-settings.yaml' })
  expect(code).toBe(78)
  expect(stderr).toContain(
    `report-gateway: invalid configuration: CONFIG_FILE (my-settings.yaml): cannot be read (ENOENT: no file ${ROOT}/my-settings.yaml; a relative path is read from ${ROOT}, not from ${ROOT}/config, where npm was run; give an absolute path)`,
  )
}, 60_000)

it('a teams file with a mistake on line 6: exit 78 naming the setting and the line', async () => {
  const teams = join(dir, 'teams.yaml')
  writeFileSync(teams, 'teams:\n  demo:\n    keys: ["sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"]\n    advertisers: ["*"]\n  growth:\n    advertisers: 101, 102\n    keys: ["sha256:60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"]\n')
  const { code, stderr } = await npmStart(ROOT, { PLATFORM_BASE_URL: 'http://127.0.0.1:8090', PLATFORM_TOKEN: 'platform-token-abcdef123456', TEAMS_FILE: teams })
  expect(code).toBe(78)
  expect(stderr).toMatch(new RegExp(`report-gateway: invalid configuration: teams\\.growth\\.advertisers: .+; line 6 of TEAMS_FILE \\(${teams.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\)\n`))
}, 60_000)
