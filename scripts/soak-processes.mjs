/**
 * The processes the soak starts (scripts/soak.mjs): each with its log file, waited for until
 * ready, stopped at the end, on error and on SIGINT/SIGTERM; the run's clock and its log line.
 */
import { spawn } from 'node:child_process'
import { cpSync, createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { args, ROOT } from './soak-options.mjs'

export const tmp = mkdtempSync(join(tmpdir(), 'rgw-soak-'))
const children = new Set()
export const started = performance.now()
export let runStart = started
/** The load begins: runSeconds() counts from now. */
export function startRun() {
  runStart = performance.now()
}
export const runSeconds = () => (performance.now() - runStart) / 1000
export const log = (line) => process.stderr.write(`[soak ${((performance.now() - started) / 1000).toFixed(0).padStart(4)}s] ${line}\n`)

/** The environment of the parent, less anything that would point a child elsewhere. */
const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(PLATFORM_|CREDENTIAL_|REDIS_|ADMIN_|GATEWAY_SECRET|CONFIG_FILE|TEAMS_FILE|DEMO|PORT|HOST)/.test(k)))

export function launch(name, cmd, argv, env = {}) {
  // Appended: a process started again after a fault writes after its predecessor.
  const out = createWriteStream(join(tmp, `${name}.log`), { flags: 'a' })
  const child = spawn(cmd, argv, { cwd: ROOT, env: { ...baseEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  const proc = { name, child, memory: [], onMemory: null, startedAt: performance.now(), told: null, exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code))) }
  children.add(proc)
  void proc.exited.then(() => children.delete(proc))
  child.stdout.pipe(out)
  let partial = ''
  child.stderr.on('data', (chunk) => {
    out.write(chunk)
    const lines = (partial + chunk.toString('utf8')).split('\n')
    partial = lines.pop() ?? ''
    for (const line of lines) if (line.startsWith('SOAK-MEM ')) proc.onMemory?.(JSON.parse(line.slice(9)))
  })
  return proc
}

export const alive = (proc) => proc.child.exitCode === null && proc.child.signalCode === null

export function tail(proc) {
  try {
    return readFileSync(join(tmp, `${proc.name}.log`), 'utf8').slice(-3000)
  } catch {
    return ''
  }
}

export async function until(what, proc, check, ms = 60_000) {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (!alive(proc)) throw new Error(`${proc.name} exited at start:\n${tail(proc)}`)
    if (await check().catch(() => false)) return
    await sleep(100)
  }
  throw new Error(`${what} not ready within ${ms} ms:\n${tail(proc)}`)
}

export async function stopAll() {
  await Promise.all(
    [...children].map(async (proc) => {
      proc.told ??= 'SIGTERM'
      proc.child.kill('SIGCONT')
      proc.child.kill('SIGTERM')
      const done = await Promise.race([proc.exited.then(() => true), sleep(5000).then(() => false)])
      if (!done) proc.child.kill('SIGKILL')
    }),
  )
}

export function keepLogs() {
  if (!args['keep-logs']) return
  const dir = resolve(args['keep-logs'])
  mkdirSync(dir, { recursive: true })
  cpSync(tmp, dir, { recursive: true, filter: (src) => src === tmp || src.endsWith('.log') })
  log(`logs of every process kept in ${dir}`)
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    log(`${signal}: stopping every process the soak started`)
    void stopAll().finally(() => process.exit(130))
  })
}
process.on('exit', () => {
  for (const proc of children) proc.child.kill('SIGKILL')
  rmSync(tmp, { recursive: true, force: true })
})
