import { spawnSync } from 'node:child_process'
import { createServer, type Server } from 'node:net'
import { fileURLToPath } from 'node:url'
import { beforeAll, describe, expect, it } from 'vitest'
import { ensureBuilt } from '../helpers/dist.js'

// Every CLI prints its usage on --help (exit 0) and answers a usage
// mistake with one line naming it, exit code 2, no stack trace. keys: keys-cli.test.ts.

const dist = (path: string) => fileURLToPath(new URL(`../../dist/${path}`, import.meta.url))

function run(file: string, args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [dist(file), ...args], { encoding: 'utf8', timeout: 20_000, env: { PATH: process.env.PATH ?? '', ...env } })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

const CLIS = [
  { name: 'warm', file: 'cli/warm.js', mistakes: [[], ['--advertisers'], ['--bogus'], ['--advertisers', 'x', '--from', '2026-01-01', '--to', '2026-01-02', '--url', 'http://127.0.0.1:9']] },
  { name: 'openapi', file: 'cli/openapi.js', mistakes: [['--bogus'], ['a.json', 'b.json']] },
  { name: 'sandbox', file: 'sandbox/main.js', mistakes: [['serve']], envMistakes: [{ PORT: 'eighty' }, { SANDBOX_LATENCY_MS: '-1' }] },
]

beforeAll(() => ensureBuilt(dist('cli/warm.js')), 130_000)

describe.each(CLIS)('npm run $name', ({ name, file, mistakes, envMistakes = [] }) => {
  it('prints its usage on --help and -h, exit 0', () => {
    for (const flag of ['--help', '-h']) {
      const r = run(file, [flag])
      expect(r.status).toBe(0)
      expect(r.stderr).toBe('')
      expect(r.stdout).toMatch(new RegExp(`^usage: npm run ${name}`))
      expect(r.stdout).toMatch(/exit code: .*2 (for )?a usage (mistake|error)/)
    }
  })

  it('answers a usage mistake in one line naming the help, exit 2, no stack trace', () => {
    const cases = [...mistakes.map((args) => ({ args, env: {} })), ...envMistakes.map((env) => ({ args: [], env }))]
    for (const { args, env } of cases) {
      const r = run(file, args, env)
      const what = `${JSON.stringify(env)} ${args.join(' ')}`
      expect(r.status, what).toBe(2)
      expect(r.stderr, what).toMatch(new RegExp(`^${name}: [^\\n]+ \\(npm run ${name} -- --help\\)\\n$`))
      expect(r.stderr, what).not.toMatch(/\n\s+at |node:internal/)
    }
  })
})

// `npm run sandbox` is the README's first step beside a gateway: a port another program
// holds (8090 is common) is one line saying what to do, as the gateway's own start says it.
describe('npm run sandbox on a port in use', () => {
  it('stops with one line naming the address and what to do, exit 1, no stack trace', async () => {
    const taken: Server = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    try {
      const port = (taken.address() as { port: number }).port
      const r = run('sandbox/main.js', [], { PORT: String(port) })
      expect(r.status).toBe(1)
      expect(r.stdout).toBe('')
      expect(r.stderr).toBe(`sandbox: cannot listen on 127.0.0.1:${port}: the port is in use by another process: stop it, or choose a free port (set HOST, PORT)\n`)
    } finally {
      await new Promise((resolve) => taken.close(resolve))
    }
  })
})
