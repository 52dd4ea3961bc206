import { execFileSync } from 'node:child_process'
import { existsSync, rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/**
 * Builds dist/ when `file` (a path in it) is missing: `npm test` builds first (pretest),
 * a lone `vitest run` of one file may not have. Call it in a beforeAll with a long timeout.
 * The build is incremental: its record (dist/.tsbuildinfo) says nothing changed even when
 * an output is gone, so a missing output drops the record and everything is emitted again.
 */
export function ensureBuilt(file: string): void {
  if (existsSync(file)) return
  rmSync(`${ROOT}dist/.tsbuildinfo`, { force: true })
  execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'ignore', timeout: 120_000 })
}
