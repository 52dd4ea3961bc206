import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { skippedLine, TOOLS, type Skip } from '../helpers/missing-tools.js'

// A suite that says what it did not test: a test skipped for a missing tool is named in
// the run's last line with the command that installs the tool, and with CI=true the run fails.

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const FIXTURE = 'test/helpers/missing-tool-fixture/vitest.config.ts'

const skip = (tool: keyof typeof TOOLS, what: string): Skip => ({ tool: TOOLS[tool].name, install: TOOLS[tool].install, what })

describe("the run's line of what was not tested", () => {
  it('is absent when nothing was skipped', () => {
    expect(skippedLine([])).toBeNull()
  })

  it('names each tool once, what needed it, and how to install it', () => {
    const line = skippedLine([skip('redis', 'the Redis tests'), skip('chromium', 'the console browser test'), skip('redis', 'the Redis tests'), skip('promtool', 'the /metrics lint'), skip('promtool', 'the PrometheusRule check')])
    expect(line).toBe(
      'NOT TESTED, a tool is missing: the Redis tests (2 files): no redis-server (apt-get install -y redis-server); ' +
        'the console browser test: no chromium (apt-get install -y chromium); ' +
        'the /metrics lint, the PrometheusRule check: no promtool (apt-get install -y --no-install-recommends prometheus)',
    )
    expect(line?.split('\n')).toHaveLength(1)
  })

  it.each([
    ['passes, saying so at the end', undefined, 0],
    ['fails with CI=true', 'true', 1],
  ])('a run that skipped for a missing tool %s', (_name, ci, code) => {
    const env: NodeJS.ProcessEnv = { ...process.env, CI: ci }
    if (ci === undefined) delete env.CI
    const run = spawnSync(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', '--config', FIXTURE], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 })
    const output = `${run.stdout}${run.stderr}`
    expect(run.status, output).toBe(code)
    expect(output).toContain('NOT TESTED, a tool is missing: the fixture browser test: no a-tool-no-machine-has (apt-get install -y chromium)')
  })
})
