import { appendFileSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

// A test that needs a tool the machine lacks (redis-server, chromium, promtool, ...) is
// skipped, and the run says so: each skip is noted here, in the folder the run's global
// set-up made (missing-tools-setup.ts), and the run ends with one line naming what was
// not tested and the command that installs each tool. With CI=true such a skip fails the run.

export interface Tool {
  name: string
  /** The command that installs it (Debian, as .ci/run does). */
  install: string
}

export const TOOLS = {
  redis: { name: 'redis-server', install: 'apt-get install -y redis-server' },
  chromium: { name: 'chromium', install: 'apt-get install -y chromium' },
  promtool: { name: 'promtool', install: 'apt-get install -y --no-install-recommends prometheus' },
  curl: { name: 'curl', install: 'apt-get install -y curl' },
  gnuDate: { name: 'GNU date', install: 'apt-get install -y coreutils' },
  nginx: { name: 'nginx', install: 'apt-get install -y nginx' },
  openssl: { name: 'openssl', install: 'apt-get install -y openssl' },
  python3: { name: 'python3', install: 'apt-get install -y python3' },
} satisfies Record<string, Tool>

/** The variable naming the folder where skips are noted (set by the run's global set-up). */
export const SKIPPED_DIR_VARIABLE = 'RGW_SKIPPED_TOOLS_DIR'
const FILE = 'skipped.jsonl'

export interface Skip {
  tool: string
  install: string
  what: string
}

/**
 * `found`, as it is; when false, `what` (the tests that need `tool`) is noted as not
 * tested for the run's last line, or (outside a run with the global set-up) warned at once.
 */
export function needTool(tool: Tool, found: boolean, what: string): boolean {
  if (found) return true
  const skip: Skip = { tool: tool.name, install: tool.install, what }
  const dir = process.env[SKIPPED_DIR_VARIABLE]
  // One short line per append: whole even when several test processes append at once.
  if (dir) appendFileSync(join(dir, FILE), `${JSON.stringify(skip)}\n`)
  else console.warn(skippedLine([skip]))
  return false
}

/** The skips noted in `dir`. */
export function readSkips(dir: string): Skip[] {
  let text = ''
  try {
    text = readFileSync(join(dir, FILE), 'utf8')
  } catch {
    return []
  }
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Skip)
}

/** One line for the end of a run: what was not tested, by tool, and how to install each; null when nothing was skipped. */
export function skippedLine(skips: readonly Skip[]): string | null {
  if (skips.length === 0) return null
  const byTool = new Map<string, { install: string; what: Map<string, number> }>()
  for (const s of skips) {
    const tool = byTool.get(s.tool) ?? { install: s.install, what: new Map<string, number>() }
    tool.what.set(s.what, (tool.what.get(s.what) ?? 0) + 1)
    byTool.set(s.tool, tool)
  }
  const parts = [...byTool].map(([name, { install, what }]) => {
    const tests = [...what].map(([w, files]) => (files > 1 ? `${w} (${files} files)` : w)).join(', ')
    return `${tests}: no ${name} (${install})`
  })
  return `NOT TESTED, a tool is missing: ${parts.join('; ')}`
}
