/**
 * The README's "point a gateway at the sandbox by hand" block works word
 * for word. Its commands are read from README.md and run in order in a shell, in an empty
 * folder; only the ports change (free ones instead of 8090, 8080 and the admin 8081) and
 * `npm run …` is spelled as the script it runs, so that no npm is needed.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ensureBuilt } from '../helpers/dist.js'
import { needTool, TOOLS } from '../helpers/missing-tools.js'
import { readmeShLines } from '../helpers/readme-blocks.js'
import { reservedPorts } from '../helpers/start-redis.js'
import { startsTimeout, testTimeLeft, waitFor } from '../helpers/wait.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** The shell commands of the README's sh block that starts with `npm run sandbox`, comments left out. */
function readmeCommands(): string[] {
  return readmeShLines('npm run sandbox')
    .map((line) => line.replace(/\s+#\s.*$/, '').trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
}

const children: ChildProcess[] = []
const dir = mkdtempSync(join(tmpdir(), 'rgw-quick-start-'))
let ports: { sandbox: number; proxy: number; admin: number }

function spell(command: string): string {
  return command
    .replace(/npm run --silent keys --/g, `node ${ROOT}dist/cli/keys.js`)
    .replace(/npm run sandbox/g, `node ${ROOT}dist/sandbox/main.js`)
    .replace(/npm start/g, `node ${ROOT}dist/main.js`)
    .replace(/127\.0\.0\.1:8090/g, `127.0.0.1:${ports.sandbox}`)
    .replace(/127\.0\.0\.1:8080/g, `127.0.0.1:${ports.proxy}`)
}

/** Starts a command that keeps running (`exec env`: the child is the command itself); resolves once its output matches `ready`. */
async function startBackground(command: string, env: Record<string, string>, ready: RegExp): Promise<void> {
  const child = spawn('sh', ['-c', `exec env ${spell(command)}`], { cwd: dir, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  let output = ''
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()))
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()))
  await waitFor(() => `${command} to be ready:\n${output}`, () => ready.test(output) || child.exitCode !== null, testTimeLeft(), 50)
  if (child.exitCode !== null) throw new Error(`${command} exited ${child.exitCode}:\n${output}`)
}

/** Runs a command to its end; killed, if it still runs, as the test's time runs out. */
async function runShell(command: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn('sh', ['-c', spell(command)], { cwd: dir, env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c))
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c))
  const timer = setTimeout(() => child.kill('SIGKILL'), testTimeLeft())
  const status = await new Promise<number | null>((resolve) => child.once('close', resolve))
  clearTimeout(timer)
  return { status, stdout, stderr }
}

beforeAll(async () => {
  ensureBuilt(join(ROOT, 'dist/main.js'))
  const [sandbox, proxy, admin] = (await reservedPorts(3)) as [number, number, number]
  ports = { sandbox, proxy, admin }
}, 130_000)

afterAll(async () => {
  for (const child of children) {
    if (child.exitCode !== null || child.signalCode !== null) continue
    child.kill('SIGTERM')
    await new Promise((resolve) => child.once('exit', resolve))
  }
  rmSync(dir, { recursive: true, force: true })
})

describe.skipIf(!needTool(TOOLS.curl, spawnSync('curl', ['--version']).status === 0, 'the README quick start'))('README quick start: a gateway in front of the sandbox, by hand', () => {
  // Three process starts: the sandbox, the keys CLI, the gateway.
  it('runs word for word: a team in teams.yaml, the gateway on 127.0.0.1, MISS then HIT shown by curl -i', async () => {
    const commands = readmeCommands()
    expect(commands[0]).toBe('npm run sandbox')
    const curls: string[] = []
    for (const command of commands) {
      if (command === 'npm run sandbox') await startBackground(command, { PORT: String(ports.sandbox) }, /platform sandbox listening/)
      else if (command.endsWith('npm start')) {
        expect(command).toMatch(/^HOST=127\.0\.0\.1 .*CONFIG_FILE=teams\.yaml npm start$/)
        await startBackground(command, { PORT: String(ports.proxy), ADMIN_PORT: String(ports.admin), LOG_LEVEL: 'info' }, /report gateway listening/)
      } else if (command.includes(`:8080/`)) curls.push(command)
      else {
        const r = await runShell(command)
        expect(r.status, `${command}\n${r.stderr}`).toBe(0)
      }
    }
    expect(readFileSync(join(dir, 'teams.yaml'), 'utf8')).toMatch(/^teams:\n {2}demo:\n/)
    expect(curls).toHaveLength(1)
    const first = await runShell(curls[0]!)
    const second = await runShell(curls[0]!)
    expect(first.stdout).toMatch(/^HTTP\/1\.1 200 /)
    expect(first.stdout).toMatch(/^x-cache: MISS\r?$/m)
    expect(second.stdout).toMatch(/^x-cache: HIT\r?$/m)
  }, startsTimeout(3))
})
