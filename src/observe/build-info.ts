import { createRequire } from 'node:module'

/** What runs: the gateway's version, the commit it was built from, and the Node running it. */
export interface BuildInfo {
  version: string
  /** GATEWAY_COMMIT (the image sets it from its REVISION build argument), or 'unknown'. */
  commit: string
  node: string
}

// A commit id as git writes it, abbreviated or whole; anything else is not one.
const COMMIT = /^[0-9a-f]{7,40}$/

interface PackageJson {
  version: string
  engines: { node: string }
}

/** package.json, one level above src/ and dist/ alike. */
function packageJson(): PackageJson {
  return createRequire(import.meta.url)('../../package.json') as PackageJson
}

/** The build of this process: package.json's version. */
export function buildInfo(env: NodeJS.ProcessEnv = process.env): BuildInfo {
  const { version } = packageJson()
  const commit = env.GATEWAY_COMMIT?.trim().toLowerCase() ?? ''
  return { version, commit: COMMIT.test(commit) ? commit : 'unknown', node: process.version }
}

// The floor of an engines range as npm writes one: `^24.12.0`, `>=24.12.0`, `~24.12`.
const FLOOR = /^\s*(?:\^|~|>=)?\s*v?(\d+)\.(\d+)(?:\.(\d+))?\s*$/

/**
 * Why `node` cannot run the gateway, or null: older than the floor of package.json's
 * `engines.node`. An older Node starts and then fails inside (Node 20's ArrayBuffer has
 * no `transfer()`: every proxied answer was a 500), so the start refuses it. A later
 * major is not refused: the caret of engines is npm's warning, not a known failure.
 */
export function nodeRefusal(node: string = process.versions.node, engines: string = packageJson().engines.node): string | null {
  const floor = FLOOR.exec(engines)
  if (floor === null) return null
  const want = [floor[1], floor[2], floor[3] ?? '0'].map(Number)
  const have = node.replace(/^v/, '').split('.').map((n) => Number.parseInt(n, 10))
  for (let i = 0; i < 3; i++) {
    const a = have[i] ?? 0
    const b = want[i] ?? 0
    if (a > b) return null
    if (a < b) return `Node ${node} cannot run the gateway: it needs Node ${want.join('.')} or later (package.json engines: ${engines})`
  }
  return null
}
