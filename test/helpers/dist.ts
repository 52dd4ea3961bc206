import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/**
 * Builds dist/ when `file` (a path in it) is missing: `npm test` builds first (pretest),
 * a lone `vitest run` of one file may not have. Call it in a beforeAll with a long timeout.
 */
export function ensureBuilt(file: string): void {
  if (!existsSync(file)) execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'ignore', timeout: 120_000 })
}
