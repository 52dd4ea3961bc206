/**
 * The README's "Calling it" examples work as written for a team limited to some
 * advertisers (the README's own account, 101) with write: each `curl` line of the block
 * that starts with `KEY=rgw_…` is run by curl against a gateway in front of the sandbox,
 * with `$KEY` and `$GW` set; a line holding a placeholder (`<etag>`, `<id>`) is left out.
 */
import { execFile, spawnSync } from 'node:child_process'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/build-gateway.js'
import { useSandboxGateway } from '../helpers/fixtures.js'
import { needTool, TOOLS } from '../helpers/missing-tools.js'
import { readmeShLines } from '../helpers/readme-blocks.js'

/** The `curl` commands of the README's sh block that starts with `KEY=rgw_`, placeholders left out. */
function readmeCalls(): string[] {
  return readmeShLines('KEY=rgw_').filter((line) => line.startsWith('curl ') && !line.includes('<'))
}

const env = useSandboxGateway()

describe.skipIf(!needTool(TOOLS.curl, spawnSync('curl', ['--version']).status === 0, 'the README calling examples'))('README "Calling it"', () => {
  it('each example call answers 2xx for a team limited to advertiser 101 with write', async () => {
    const calls = readmeCalls()
    expect(calls.length).toBeGreaterThanOrEqual(6)
    for (const call of calls) {
      // Asynchronously: the gateway answers from this process.
      const { stdout } = await promisify(execFile)('sh', ['-c', `${call} -o /dev/null -w '%{http_code}'`], {
        encoding: 'utf8',
        timeout: 30_000,
        env: { PATH: process.env.PATH ?? '', KEY: KEYS.writer, GW: env.url },
      })
      expect(stdout, call).toMatch(/^2\d\d$/)
    }
  })

  it('the forced refresh answers with an x-cache its comment names, run after the poll before it has read the report', async () => {
    const lines = readmeShLines('KEY=rgw_')
    const at = lines.findIndex((line) => line.startsWith('# Force a fresh copy'))
    const [comment, call] = [lines[at]!, lines[at + 1]!]
    const named = ['HIT', 'MISS', 'STALE', 'REFRESH', 'BYPASS'].filter((status) => comment.includes(status))
    expect(named.length, comment).toBeGreaterThan(0)
    // The poll the block runs before it reads the same report: a copy seconds old.
    const url = /"\$GW(\/api\/v1\/report\/[^"]+)"/.exec(call)![1]!
    expect((await fetch(`${env.url}${url}`, { headers: { 'x-api-key': KEYS.all } })).status).toBe(200)
    // A team with refresh: true, as the comment says.
    const { stdout } = await promisify(execFile)('sh', ['-c', `${call} -o /dev/null -D -`], { encoding: 'utf8', timeout: 30_000, env: { PATH: process.env.PATH ?? '', KEY: KEYS.all, GW: env.url } })
    const xCache = /^x-cache: (\w+)/im.exec(stdout)?.[1]
    expect(named, `${comment}\n${stdout}`).toContain(xCache)
  })
})
