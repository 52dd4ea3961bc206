/**
 * The README's "Calling it" examples work as written for a team limited to some
 * advertisers (the README's own account, 101) with write: each `curl` line of the block
 * that starts with `KEY=rgw_…` is run by curl against a gateway in front of the sandbox,
 * with `$KEY` and `$GW` set; a line holding a placeholder (`<etag>`, `<id>`) is left out.
 */
import { execFile, spawnSync } from 'node:child_process'
import { promisify } from 'node:util'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/build-gateway.js'
import { useSandboxGateway } from '../helpers/fixtures.js'
import { needTool, TOOLS } from '../helpers/missing-tools.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** The `curl` commands of the README's sh block that starts with `KEY=rgw_`, continuations joined, placeholders left out. */
function readmeCalls(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const block = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.startsWith('KEY=rgw_'))
  if (!block) throw new Error('README.md has no sh block starting with KEY=rgw_')
  return block
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.startsWith('curl ') && !line.includes('<'))
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
})
