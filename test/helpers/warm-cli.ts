import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { ensureBuilt } from './dist.js'
import { KEYS, type SandboxGateway } from './sandbox-gateway.js'

// `npm run warm` as the CronJob runs it: the built CLI in a child process.

const CLI = fileURLToPath(new URL('../../dist/cli/warm.js', import.meta.url))

export interface WarmRun {
  code: number | null
  stdout: string
  stderr: string
}

/** `npm test` builds first (pretest); a lone `vitest run` of one file may not have. */
export function ensureWarmBuilt(): void {
  ensureBuilt(CLI)
}

/** Runs the CLI with team growth's key unless `env` says otherwise; asynchronous, so that a gateway in this process answers it. */
export function warm(args: string[], env: Record<string, string> = {}): Promise<WarmRun> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 30_000, env: { PATH: process.env.PATH ?? '', WARM_API_KEY: KEYS.growth, ...env } }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr })
    })
  })
}

/** The report calls the platform saw. */
export const reportCalls = (gw: SandboxGateway) => gw.callerRequests().filter((r) => r.path.includes('/report/'))
