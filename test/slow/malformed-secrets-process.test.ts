import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { ensureBuilt } from '../helpers/gateway-process.js'
import { BASE_ENV, SEED, shownPart, withCase } from '../helpers/malformed-secrets.js'

// The gateway process (dist/main.js) started with a malformed secret: it exits 78 naming
// the variable, and its output holds no part of the secret. Twelve process starts, about
// a second each: here rather than in `npm test`, which checks the same errors in process
// (test/property/malformed-secrets.test.ts) and a process's exit 78 on a bad setting
// (test/slow/startup.test.ts).

const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url))

describe('the process start-up output', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rgw-malformed-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('exits 78 naming the variable, and prints no part of the secret', async () => {
    ensureBuilt()
    await fc.assert(
      fc.asyncProperty(withCase.filter(({ c }) => c.refused), async ({ s, c }) => {
        // The case's virtual files, written for the process.
        const env: Record<string, string> = { PATH: process.env.PATH ?? '', ...BASE_ENV, ...c.env }
        for (const [path, text] of Object.entries(c.files)) {
          const real = join(dir, path.replace(/\W/g, '_'))
          writeFileSync(real, text)
          for (const [k, v] of Object.entries(env)) if (v === path) env[k] = real
        }
        const { code, output } = await run(env)
        expect(code, `${c.form}: ${output}`).toBe(78)
        expect(output, c.form).toContain(c.names)
        expect(shownPart(output, s), `${c.form}: ${output}`).toBeNull()
      }),
      { numRuns: 12, seed: SEED },
    )
  }, 120_000)
})

function run(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
    child.on('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, output })
    })
  })
}
