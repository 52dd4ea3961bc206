import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readSkips, SKIPPED_DIR_VARIABLE, skippedLine } from './missing-tools.js'

/**
 * The run's global set-up (vitest.config.ts): a folder where the test processes note what
 * they skipped for a missing tool (missing-tools.ts); at the end of the run, one line
 * naming it all and how to install each tool. With CI=true a skip fails the run.
 */
export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'rgw-skipped-tools-'))
  process.env[SKIPPED_DIR_VARIABLE] = dir
  return () => {
    const line = skippedLine(readSkips(dir))
    rmSync(dir, { recursive: true, force: true })
    if (line === null) return
    if (process.env.CI === 'true') {
      console.error(`${line}\nCI=true: a test skipped for a missing tool fails the run.`)
      process.exitCode = 1
    } else {
      console.warn(line)
    }
  }
}
