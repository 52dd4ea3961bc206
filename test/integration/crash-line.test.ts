import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { TEAMS_YAML } from '../helpers/build-gateway.js'
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js'
import { settled } from '../helpers/wait.js'

// A crash (an exception no code caught, a rejection no code handled, a module that throws
// as the start loads it) ends the process with exit code 1 and one JSON line on stdout that
// names the error (`"level":60`, `err`), its secrets scrubbed as in every log line: a log
// shipper reads it as it reads the others, and no secret in the error reaches the log.

const PROBE = fileURLToPath(new URL('../helpers/crash-probe.mjs', import.meta.url))
const TOKEN = 'crash-line-platform-token-0123456789'
const MESSAGE = `the platform token ${TOKEN} went where it should not`
// Nothing listens there: the token's check at start fails, and the start goes on.
const ENV = { PLATFORM_BASE_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN: TOKEN, CRASH_MESSAGE: MESSAGE }

let gw: GatewayProcess | undefined
afterEach(async () => {
  await gw?.close()
  gw = undefined
})

/** The output's lines that name the crash's error, each parsed, or the line itself where it is no JSON. */
function crashLines(output: string): unknown[] {
  return output
    .split('\n')
    .filter((line) => line.includes('went where it should not') || /\bat .*\.js:\d+/.test(line) || /Error/.test(line))
    .map((line) => {
      try {
        return JSON.parse(line) as unknown
      } catch {
        return line
      }
    })
}

describe('a crash', () => {
  it.each([
    ['a rejection no code handles', 'reject'],
    ['an exception thrown in a timer', 'throw'],
  ] as const)('while serving, %s: exit 1 and one JSON line naming the error, the secret scrubbed', async (_what, kind) => {
    gw = await spawnGateway({ env: ENV, yaml: TEAMS_YAML, nodeArgs: ['--import', PROBE], ipc: true })
    gw.child.send({ kind })
    expect(await settled('the exit', gw.exited)).toMatchObject({ code: 1, signal: null })
    const output = gw.output()
    expect(output).not.toContain(TOKEN)
    expect(crashLines(output)).toEqual([
      expect.objectContaining({ level: 60, msg: expect.stringMatching(/^crashed/), err: expect.objectContaining({ type: 'Error', message: 'the platform token [REDACTED] went where it should not', stack: expect.any(String) }) }),
    ])
  })

  it('at start, a module that throws as it loads: exit 1 and one JSON line naming the error, the secret scrubbed', async () => {
    const failed = await spawnGateway({ env: { ...ENV, CRASH_AT_START: '/dist/http/admin/cluster-route.js' }, yaml: TEAMS_YAML, nodeArgs: ['--import', PROBE] }).then(
      () => null,
      (err: unknown) => String((err as Error).message),
    )
    expect(failed).toMatch(/^gateway exited \(1\) at start/)
    const output = failed ?? ''
    expect(output).not.toContain(TOKEN)
    expect(crashLines(output)).toEqual([
      expect.objectContaining({ level: 60, msg: expect.stringMatching(/^failed to start/), err: expect.objectContaining({ type: 'Error', message: 'the platform token [REDACTED] went where it should not', stack: expect.any(String) }) }),
    ])
  })
})
