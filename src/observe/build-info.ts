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

/** The build of this process: package.json's version (one level above src/ and dist/ alike). */
export function buildInfo(env: NodeJS.ProcessEnv = process.env): BuildInfo {
  const { version } = createRequire(import.meta.url)('../../package.json') as { version: string }
  const commit = env.GATEWAY_COMMIT?.trim().toLowerCase() ?? ''
  return { version, commit: COMMIT.test(commit) ? commit : 'unknown', node: process.version }
}
