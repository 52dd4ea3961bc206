import { spawn } from 'node:child_process'
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import {
  contextFiles,
  copiesOf,
  envOf,
  execForm,
  globalArgs,
  parseDockerfile,
  readDockerignore,
  replayCopyFromContext,
  replayCopyFromStage,
  runCommandOf,
  stagesOf,
  substitute,
  type Stage,
} from '../helpers/dockerfile.js'
import { reservedPorts } from '../helpers/start-redis.js'
import { useRedis, useSandbox } from '../helpers/fixtures.js'
import { KEYS, TEAMS_YAML } from '../helpers/build-gateway.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// The image build replayed without a container engine: each stage of the Dockerfile in
// an empty folder of its own standing for the stage's `/`, holding exactly what its COPY
// lines bring in (from the build context as .dockerignore lets it through, or from an
// earlier stage), its RUN commands run there with /bin/sh -c and the stage's ENV, on
// the Node the suite runs on (the image's) and npm against the registry. Then the
// runtime stage's files start as its CMD starts them, and answer /healthz, the image's
// own HEALTHCHECK included. What the base image holds besides Node and npm is not
// there, so a build that needs more of it than they fails here too.

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
/** One RUN command's longest: an `npm ci` against the registry, or the TypeScript build. */
const RUN_TIMEOUT_MS = 5 * 60_000

interface StageResult {
  root: string
  workdir: string
  env: Map<string, string>
  user: string | null
  cmd: string[] | null
  healthcheck: string[] | null
}

interface RunOutcome {
  code: number | null
  signal: NodeJS.Signals | null
  output: string
}

/** PATH of a RUN: the Node of the suite first (the image's), the machine's tools, none of the repository's node_modules/.bin. */
function buildPath(): string {
  const rest = (process.env.PATH ?? '').split(delimiter).filter((dir) => dir && !dir.includes('node_modules'))
  return [dirname(process.execPath), ...rest].join(delimiter)
}

/**
 * What this machine needs to reach the npm registry (a proxy, the certificate authority
 * of one), passed through as a `docker build` on it would pass them as build arguments.
 */
function networkEnv(): Record<string, string> {
  const names = /^(NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR|(HTTPS?|NO|ALL)_PROXY|npm_config_(registry|cafile|ca|proxy|https_proxy|noproxy|strict_ssl))$/i
  return Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => names.test(e[0]) && e[1] !== undefined))
}

function run(file: string, args: string[], cwd: string, env: Record<string, string>, timeoutMs: number): Promise<RunOutcome> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs, killSignal: 'SIGKILL' })
    let output = ''
    const keep = (chunk: string) => (output = (output + chunk).slice(-20_000))
    child.stdout.setEncoding('utf8').on('data', keep)
    child.stderr.setEncoding('utf8').on('data', keep)
    child.once('close', (code, signal) => resolve({ code, signal, output }))
  })
}

describe('the image builds and runs (the Dockerfile replayed without a container engine)', () => {
  const sandbox = useSandbox()
  const redis = useRedis()
  const dir = mkdtempSync(join(tmpdir(), 'rgw-image-'))
  // The stages hold three copies of node_modules (tens of thousands of files): deleting
  // them took more than 2 min on a machine whose load was 13 on 2 cores.
  afterAll(() => rmSync(dir, { recursive: true, force: true }), 10 * 60_000)

  const instructions = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))
  const stages = stagesOf(instructions)
  const args = globalArgs(instructions)
  const patterns = readDockerignore(readFileSync(join(ROOT, '.dockerignore'), 'utf8'))
  const context = contextFiles(ROOT, patterns)
  const built = new Map<string, StageResult>()

  async function replay(stage: Stage, index: number): Promise<StageResult> {
    const name = stage.name ?? String(index)
    const root = join(dir, `stage-${index}-${name}`)
    const parent = built.get(stage.base)
    // FROM an earlier stage starts from its files and settings; FROM an image, from nothing but Node and npm.
    if (parent) cpSync(parent.root, root, { recursive: true, verbatimSymlinks: true })
    else mkdirSync(root, { recursive: true })
    const result: StageResult = parent ? { ...parent, root, env: new Map(parent.env) } : { root, workdir: '/', env: new Map(), user: null, cmd: null, healthcheck: null }
    const vars = new Map(result.env)
    for (const ins of stage.body) {
      switch (ins.cmd) {
        case 'ARG': {
          const [key, value] = ins.args.split('=', 2) as [string, string?]
          vars.set(key.trim(), value === undefined ? (args.get(key.trim()) ?? '') : substitute(value.trim(), vars))
          break
        }
        case 'ENV':
          for (const [key, value] of envOf(ins.args, vars)) {
            result.env.set(key, value)
            vars.set(key, value)
          }
          break
        case 'WORKDIR':
          result.workdir = join(result.workdir, substitute(ins.args, vars))
          mkdirSync(join(root, result.workdir), { recursive: true })
          break
        case 'COPY':
        case 'ADD': {
          if (ins.cmd === 'ADD') throw new Error(`ADD at line ${ins.line}: the replay copies with COPY's rules only`)
          const [copy] = copiesOf({ ...stage, body: [ins] })
          if (copy!.flags.some((f) => /^--(parents|exclude)\b/.test(f))) throw new Error(`COPY at line ${ins.line}: ${copy!.flags.join(' ')} is not replayed`)
          if (copy!.from === null) replayCopyFromContext(copy!, ROOT, context, root, result.workdir)
          else {
            const from = built.get(copy!.from)
            if (!from) throw new Error(`COPY --from=${copy!.from} at line ${ins.line}: no earlier stage of that name (an image is not replayed)`)
            replayCopyFromStage(copy!, from.root, from.workdir, root, result.workdir)
          }
          break
        }
        case 'RUN': {
          const command = runCommandOf(ins)
          const env = { PATH: buildPath(), HOME: process.env.HOME ?? '/root', ...networkEnv(), ...Object.fromEntries(vars), ...Object.fromEntries(result.env) }
          const [file, ...rest] = command.exec ?? ['/bin/sh', '-c', command.shell!]
          const outcome = await run(file!, rest, join(root, result.workdir), env, RUN_TIMEOUT_MS)
          expect(
            outcome.code,
            `RUN at line ${ins.line} of stage ${name} (${command.shell ?? JSON.stringify(command.exec)}) failed (${outcome.signal ?? `exit ${outcome.code}`}); its output ends:\n${outcome.output.slice(-4000)}`,
          ).toBe(0)
          break
        }
        case 'USER':
          result.user = substitute(ins.args, vars)
          break
        case 'CMD':
          result.cmd = execForm(ins.args)
          break
        case 'HEALTHCHECK':
          result.healthcheck = execForm(ins.args)
          break
        case 'ENTRYPOINT':
        case 'SHELL':
        case 'ONBUILD':
        case 'VOLUME':
          throw new Error(`${ins.cmd} at line ${ins.line} is not replayed: extend test/slow/image-build.test.ts`)
        default:
          // LABEL, EXPOSE, STOPSIGNAL: metadata, checked by test/unit/dockerfile.test.ts.
          break
      }
    }
    return result
  }

  it(
    'every stage builds in an empty folder from what its COPY lines let in, and the runtime stage answers /healthz, the console with its scripts and the API descriptions; configured as the chart configures it, a report, and the cache-warm CronJob\'s command warms one',
    async () => {
      for (const [index, stage] of stages.entries()) built.set(stage.name ?? String(index), await replay(stage, index))
      const runtime = built.get(stages[stages.length - 1]!.name ?? String(stages.length - 1))!
      const app = join(runtime.root, runtime.workdir)
      // Only what the runtime stage copies is there: no sources, no dev dependencies.
      expect(existsSync(join(app, 'src')), 'the runtime holds no sources').toBe(false)
      expect(existsSync(join(app, 'node_modules', 'typescript')), 'the runtime holds no dev dependency').toBe(false)

      const [port, adminPort] = (await reservedPorts(2)) as [number, number]
      const env = { PATH: buildPath(), ...Object.fromEntries(runtime.env), HOST: '127.0.0.1', PORT: String(port), ADMIN_HOST: '127.0.0.1', ADMIN_PORT: String(adminPort) }
      // As the image's user when the suite runs as root: its files are readable to uid 1000, not only to their owner.
      const user = process.getuid?.() === 0 && runtime.user && /^\d+(:\d+)?$/.test(runtime.user) ? runtime.user.split(':').map(Number) : null
      if (user) for (let d = runtime.root; d.startsWith(dir); d = dirname(d)) chmodSync(d, 0o755)
      const [file, ...cmdArgs] = runtime.cmd!
      // Nothing configured: the gateway starts in demo mode with its bundled sandbox (README, Quick start).
      const child = spawn(file === 'node' ? process.execPath : file!, cmdArgs, {
        cwd: app,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
        ...(user ? { uid: user[0]!, gid: user[1] ?? user[0]! } : {}),
      })
      let output = ''
      child.stdout.setEncoding('utf8').on('data', (c: string) => (output = (output + c).slice(-20_000)))
      child.stderr.setEncoding('utf8').on('data', (c: string) => (output = (output + c).slice(-20_000)))
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
      try {
        await waitFor(
          () => `the runtime stage's gateway to answer /healthz; it printed:\n${output}`,
          async () => child.exitCode === null && (await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false)),
          testTimeLeft(),
          100,
        )
        const health = await fetch(`http://127.0.0.1:${adminPort}/healthz`)
        expect(health.status).toBe(200)
        // The console's browser scripts are built into dist/ as well: every script the page
        // names and every module they import, and the chart library from production node_modules.
        const admin = `http://127.0.0.1:${adminPort}`
        const page = await fetch(`${admin}/console`)
        expect(page.status).toBe(200)
        const scripts = [...(await page.text()).matchAll(/<script[^>]* src="([^"]+)"/g)].map((m) => m[1]!)
        expect(scripts.length, 'the console page names its scripts').toBeGreaterThan(1)
        for (let i = 0; i < scripts.length; i++) {
          const script = await fetch(`${admin}${scripts[i]}`)
          expect(script.status, scripts[i]).toBe(200)
          for (const [, name] of (await script.text()).matchAll(/from '\.\/([\w-]+\.js)'/g)) if (!scripts.includes(`/console/${name}`)) scripts.push(`/console/${name}`)
        }
        expect(scripts.length, 'the page script imports its modules').toBeGreaterThan(3)
        // The API descriptions and the documentation page's own files (from production node_modules).
        for (const path of ['/docs/json', '/docs/static/swagger-ui-bundle.js']) expect((await fetch(`${admin}${path}`)).status, path).toBe(200)
        expect((await fetch(`http://127.0.0.1:${port}/openapi.json`)).status).toBe(200)
        // The image's own HEALTHCHECK, run as Docker runs it inside the container.
        const [hcFile, ...hcArgs] = runtime.healthcheck!
        const check = await run(hcFile === 'node' ? process.execPath : hcFile!, hcArgs, app, env, 10_000)
        expect(check.code, `the HEALTHCHECK command: ${check.output}`).toBe(0)
      } finally {
        child.kill('SIGTERM')
        const code = await Promise.race([exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 15_000))])
        if (code === 'hung') child.kill('SIGKILL')
        expect(code, `the gateway's exit on SIGTERM; it printed:\n${output}`).toBe(0)
      }

      // Configured as the chart configures it (files a Secret mounts, Redis, traces on), the
      // start takes paths demo mode does not: the same runtime files serve a report, and the
      // cache-warm CronJob's command warms one through it.
      const files = join(dir, 'mounted')
      mkdirSync(files, { recursive: true })
      const mounted = (name: string, text: string) => {
        writeFileSync(join(files, name), text, { mode: 0o644 })
        return join(files, name)
      }
      const [gwPort, gwAdminPort, collector] = (await reservedPorts(3)) as [number, number, number]
      const configured = {
        ...env,
        PORT: String(gwPort),
        ADMIN_PORT: String(gwAdminPort),
        PLATFORM_BASE_URL: sandbox.url,
        PLATFORM_TOKEN_FILE: mounted('platform-token', `${sandbox.issueToken()}\n`),
        ADMIN_TOKEN_FILE: mounted('admin-token', 'image-build-admin-token-0123456789\n'),
        GATEWAY_SECRET_FILE: mounted('gateway-secret', 'image-build-gateway-secret-0123456789\n'),
        REDIS_URL: redis.server.url,
        CONFIG_FILE: mounted('config.yaml', 'logLevel: info\n'),
        TEAMS_FILE: mounted('teams.yaml', TEAMS_YAML),
        // No collector listens there: the exporter's modules load and its sends fail quietly.
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collector}`,
      }
      const gw = spawn(file === 'node' ? process.execPath : file!, cmdArgs, { cwd: app, env: configured, stdio: ['ignore', 'pipe', 'pipe'], ...(user ? { uid: user[0]!, gid: user[1] ?? user[0]! } : {}) })
      let gwOutput = ''
      gw.stdout.setEncoding('utf8').on('data', (c: string) => (gwOutput = (gwOutput + c).slice(-20_000)))
      gw.stderr.setEncoding('utf8').on('data', (c: string) => (gwOutput = (gwOutput + c).slice(-20_000)))
      const gwExited = new Promise<number | null>((resolve) => gw.once('exit', (code) => resolve(code)))
      try {
        await waitFor(
          () => `the configured gateway to be ready; it printed:\n${gwOutput}`,
          async () => gw.exitCode === null && (await fetch(`http://127.0.0.1:${gwAdminPort}/readyz`).then((r) => r.status === 200, () => false)),
          testTimeLeft(),
          100,
        )
        const report = `http://127.0.0.1:${gwPort}/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-11-01&dateTo=2026-11-02`
        const first = await fetch(report, { headers: { 'x-api-key': KEYS.all } })
        expect([first.status, first.headers.get('x-cache')], gwOutput).toEqual([200, 'MISS'])
        // The CronJob's command (templates/cronjob-cache-warm.yaml): sh, GNU date, node dist/cli/warm.js.
        const warm = await run('/bin/sh', ['-c', 'exec node dist/cli/warm.js --advertisers 101 --from "$(date -d 2026-11-03 +%F)" --to 2026-11-04 --url "$WARM_URL"'], app, { ...configured, WARM_URL: `http://127.0.0.1:${gwPort}`, WARM_API_KEY: KEYS.all }, 60_000)
        expect(warm.code, `the cache-warm CronJob's command: ${warm.output}`).toBe(0)
        expect(warm.output).toMatch(/1 warmed/)
      } finally {
        gw.kill('SIGTERM')
        const code = await Promise.race([gwExited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 15_000))])
        if (code === 'hung') gw.kill('SIGKILL')
        expect(code, `the configured gateway's exit on SIGTERM; it printed:\n${gwOutput}`).toBe(0)
      }
    },
    20 * 60_000,
  )
})
