/**
 * The Dockerfile and .dockerignore, read as text: there is no Docker engine where the
 * suite runs. This checks what a build would rely on (stages, every COPY source in the
 * build context) and what the image promises (non-root, Node 24, ports, command).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, posix } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, it, expect } from 'vitest'
import { parse } from 'yaml'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const text = (path: string) => readFileSync(join(ROOT, path), 'utf8')

interface Instruction {
  cmd: string
  args: string
  line: number
}
interface Stage {
  name: string | null
  base: string
  body: Instruction[]
}

/** Instructions with continuation lines joined; comments and parser directives left out. */
function parseDockerfile(source: string): Instruction[] {
  const out: Instruction[] = []
  let current: { parts: string[]; line: number } | null = null
  for (const [i, raw] of source.split('\n').entries()) {
    const line = raw.trimEnd()
    if (/^\s*#/.test(line)) continue // comments, also inside continuations (as Docker does)
    if (current === null && line.trim() === '') continue
    const continued = line.endsWith('\\')
    const part = continued ? line.slice(0, -1) : line
    if (current === null) current = { parts: [part.trim()], line: i + 1 }
    else current.parts.push(part.trim())
    if (!continued) {
      const joined = current.parts.filter(Boolean).join(' ')
      const m = /^(\S+)\s*(.*)$/.exec(joined)!
      out.push({ cmd: m[1]!.toUpperCase(), args: m[2]!, line: current.line })
      current = null
    }
  }
  return out
}

/** Stages, with ARG defaults declared before the first FROM substituted into FROM. */
function stagesOf(instructions: Instruction[]): Stage[] {
  const globalArgs = new Map<string, string>()
  const stages: Stage[] = []
  for (const ins of instructions) {
    if (ins.cmd === 'ARG' && stages.length === 0) {
      const [name, value = ''] = ins.args.split('=', 2) as [string, string?]
      globalArgs.set(name.trim(), value.trim())
    } else if (ins.cmd === 'FROM') {
      const m = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args)
      expect(m, `FROM at line ${ins.line}`).not.toBeNull()
      const base = m![1]!.replace(/\$\{(\w+)\}|\$(\w+)/g, (_all, a?: string, b?: string) => globalArgs.get((a ?? b)!) ?? '')
      stages.push({ name: m![2] ?? null, base, body: [] })
    } else {
      expect(stages.length, `${ins.cmd} at line ${ins.line} comes after a FROM`).toBeGreaterThan(0)
      stages[stages.length - 1]!.body.push(ins)
    }
  }
  return stages
}

interface Copy {
  from: string | null
  sources: string[]
  dest: string
}
function copiesOf(stage: Stage): Copy[] {
  return stage.body
    .filter((i) => i.cmd === 'COPY' || i.cmd === 'ADD')
    .map((i) => {
      const words = i.args.split(/\s+/)
      const flags = words.filter((w) => w.startsWith('--'))
      const paths = words.filter((w) => !w.startsWith('--'))
      const from = flags.find((f) => f.startsWith('--from='))?.slice('--from='.length) ?? null
      return { from, sources: paths.slice(0, -1), dest: paths[paths.length - 1]! }
    })
}

/** Exec-form JSON of CMD/ENTRYPOINT/HEALTHCHECK CMD. */
function execForm(args: string): string[] {
  const json = args.slice(args.indexOf('['))
  return JSON.parse(json) as string[]
}

/**
 * Docker's .dockerignore rule: the last pattern that matches a path or one of its parent
 * directories decides; `!` re-includes. Supports `*`, `?` and `**`, which is all ours uses.
 */
function ignoredByDockerignore(path: string, patterns: string[]): boolean {
  const segments = path.split('/')
  const prefixes = segments.map((_s, i) => segments.slice(0, i + 1).join('/'))
  let ignored = false
  for (const raw of patterns) {
    const negate = raw.startsWith('!')
    const pattern = (negate ? raw.slice(1) : raw).replace(/^\/+|\/+$/g, '')
    const regex = new RegExp(
      `^${pattern
        .split('**')
        .map((part) => part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]'))
        .join('.*')}$`,
    )
    if (prefixes.some((p) => regex.test(p))) ignored = !negate
  }
  return ignored
}

const instructions = parseDockerfile(text('Dockerfile'))
const stages = stagesOf(instructions)
const runtime = stages[stages.length - 1]!
const dockerignore = text('.dockerignore')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'))
const pkg = JSON.parse(text('package.json')) as { main: string; scripts: Record<string, string>; engines: { node: string }; dependencies: Record<string, string> }
const only = (stage: Stage, cmd: string) => stage.body.filter((i) => i.cmd === cmd)

describe('Dockerfile', () => {
  it('builds in several stages and ships only the last one', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2)
    const names = stages.map((s) => s.name)
    expect(new Set(names).size).toBe(names.length)
    expect(runtime.name).toBe('runtime')
  })

  it('uses Node 24 in every stage, a slim or alpine variant', () => {
    for (const stage of stages) {
      const m = /^node:(\d+)(?:\.\d+)*-(\S+?)(?:@sha256:[a-f0-9]{64})?$/.exec(stage.base)
      expect(m, `base of stage ${stage.name}: ${stage.base}`).not.toBeNull()
      expect(Number(m![1])).toBe(24)
      expect(m![2]).toMatch(/slim|alpine/)
    }
    // package.json's engines range is the Node the suite runs on: 24 LTS, the image's.
    expect(pkg.engines.node).toMatch(/^\^24\.\d+\.\d+$/)
  })

  it('pins the base to an exact release, the Node the suite runs on', () => {
    const tested = (JSON.parse(text('node_modules/node/package.json')) as { version: string }).version
    for (const stage of stages) expect(stage.base, `base of stage ${stage.name}`).toMatch(new RegExp(`^node:${tested.replace(/\./g, '\\.')}-[a-z]+-(slim|alpine)(@sha256:[a-f0-9]{64})?$`))
  })

  it('says truly where the chart binds the admin listener', () => {
    const deployment = text('helm/report-gateway/templates/deployment.yaml')
    expect(deployment).toMatch(/name: ADMIN_HOST\s+valueFrom:\s+fieldRef:\s+fieldPath: status\.podIP/)
    expect(text('Dockerfile')).not.toMatch(/chart sets 0\.0\.0\.0/)
  })

  it('builds dist/ with npm ci and npm run build, after the sources and tsconfigs are copied', () => {
    const build = stages.find((s) => s.body.some((i) => i.cmd === 'RUN' && /npm run build/.test(i.args)))
    expect(build, 'a stage runs npm run build').toBeDefined()
    const body = build!.body
    const ci = body.findIndex((i) => i.cmd === 'RUN' && /\bnpm ci\b/.test(i.args))
    const run = body.findIndex((i) => i.cmd === 'RUN' && /npm run build/.test(i.args))
    expect(ci).toBeGreaterThanOrEqual(0)
    expect(ci).toBeLessThan(run)
    const copiedBefore = copiesOf({ ...build!, body: body.slice(0, run) }).flatMap((c) => c.sources)
    for (const path of ['package.json', 'package-lock.json', 'src']) expect(copiedBefore, `${path} is copied before the build`).toContain(path)
    // Every tsconfig the build names (the server's, the console's) and everything each
    // extends must be in the stage: copied itself, or under a copied folder.
    const inStage = (path: string) => copiedBefore.some((source) => path === source || path.startsWith(`${source}/`))
    const named = [...(pkg.scripts.build ?? '').matchAll(/tsc -p (\S+)/g)].map((m) => m[1]!)
    expect(named).toEqual(['tsconfig.build.json', 'src/console'])
    for (const project of named) {
      for (let config: string | undefined = project.endsWith('.json') ? project : `${project}/tsconfig.json`; config; ) {
        expect(inStage(config), `${config} is copied before the build`).toBe(true)
        const parsed = JSON.parse(text(config)) as { extends?: string }
        config = parsed.extends === undefined ? undefined : posix.join(posix.dirname(config), parsed.extends)
      }
    }
  })

  it('ships production dependencies only, and the built dist/', () => {
    const copies = copiesOf(runtime)
    const modules = copies.find((c) => c.sources.some((s) => s.endsWith('node_modules')))
    expect(modules?.from, 'node_modules comes from another stage').toBeTruthy()
    const source = stages.find((s) => s.name === modules!.from)!
    expect(source.body.some((i) => i.cmd === 'RUN' && /npm (ci|prune|install)\b.*--omit=dev/.test(i.args)), `stage ${source.name} omits dev dependencies`).toBe(true)
    const dist = copies.find((c) => c.sources.some((s) => /\/dist\/?$/.test(s)))
    expect(dist?.from, 'dist/ comes from the build stage').toBeTruthy()
    expect(stages.find((s) => s.name === dist!.from)?.body.some((i) => /npm run build/.test(i.args))).toBe(true)
    // What lands in /app: the destination, or the source's name when copied into ./
    const shipped = copies.flatMap((c) => {
      const dest = c.dest.replace(/^\.\/?/, '').replace(/\/$/, '')
      return dest ? [dest] : c.sources.map((src) => src.split('/').filter(Boolean).pop()!)
    })
    expect(shipped.sort()).toEqual(['config', 'dist', 'node_modules', 'package.json'].sort())
  })

  it('copies only paths that exist in the repository and that .dockerignore lets through', () => {
    const fromContext = stages.flatMap(copiesOf).filter((c) => c.from === null)
    expect(fromContext.length).toBeGreaterThan(0)
    for (const source of fromContext.flatMap((c) => c.sources)) {
      expect(existsSync(join(ROOT, source)), `${source} exists`).toBe(true)
      expect(ignoredByDockerignore(source, dockerignore), `${source} is in the build context`).toBe(false)
    }
    // Files under the copied directories reach the context too.
    for (const path of ['src/main.ts', 'config/default.yaml']) expect(ignoredByDockerignore(path, dockerignore), path).toBe(false)
  })

  it('keeps local state out of the build context', () => {
    for (const path of ['node_modules', 'dist', '.git', '.env', 'coverage', 'helm/report-gateway/values.yaml', 'test/unit/x.test.ts', 'npm-debug.log']) {
      expect(ignoredByDockerignore(path, dockerignore), path).toBe(true)
    }
  })

  it('runs as a non-root user, in production mode', () => {
    const users = only(runtime, 'USER')
    expect(users.length).toBeGreaterThan(0)
    const user = users[users.length - 1]!.args.split(':')[0]!
    expect(user).not.toMatch(/^(root|0)$/)
    // Numeric, so Kubernetes' runAsNonRoot can check it without reading /etc/passwd.
    expect(user).toMatch(/^\d+$/)
    const env = only(runtime, 'ENV').map((i) => i.args).join(' ')
    expect(env).toMatch(/\bNODE_ENV=production\b/)
    // The young generation's bound, which the soak reads from this line too (scripts/soak-options.mjs).
    expect(env).toMatch(/(?:^|\s)NODE_OPTIONS=--max-semi-space-size=16(?:\s|$)/)
  })

  it("starts node on dist/main.js directly (the package's start command, without npm)", () => {
    const cmd = only(runtime, 'CMD')
    expect(cmd).toHaveLength(1)
    expect(execForm(cmd[0]!.args)).toEqual(['node', 'dist/main.js'])
    expect(pkg.scripts.start).toBe('node dist/main.js')
    expect(pkg.main).toBe('dist/main.js')
    expect(only(runtime, 'ENTRYPOINT')).toEqual([])
    expect(only(runtime, 'STOPSIGNAL').map((i) => i.args)).toEqual(['SIGTERM'])
  })

  it("exposes the proxy and admin ports of config/default.yaml (8080, 8081)", () => {
    const defaults = parse(text('config/default.yaml')) as { port: number; admin: { port: number } }
    const exposed = only(runtime, 'EXPOSE').flatMap((i) => i.args.split(/\s+/)).map((p) => Number(p.split('/')[0]))
    expect(exposed.sort()).toEqual([8080, 8081])
    expect([defaults.port, defaults.admin.port].sort()).toEqual([8080, 8081])
  })

  it('checks health with node (no curl in slim images) on /healthz', () => {
    const health = only(runtime, 'HEALTHCHECK')
    expect(health).toHaveLength(1)
    const command = execForm(health[0]!.args)
    expect(command[0]).toBe('node')
    expect(command.join(' ')).toContain('/healthz')
  })

  it('declares every build argument a stage uses inside that stage (global ARGs are not inherited)', () => {
    for (const stage of stages) {
      const declared = new Set(stage.body.filter((i) => i.cmd === 'ARG' || i.cmd === 'ENV').flatMap((i) => [...i.args.matchAll(/(?:^|\s)(\w+)(?==|\s|$)/g)].map((m) => m[1]!)))
      for (const ins of stage.body.filter((i) => i.cmd !== 'ARG')) {
        for (const [, name] of ins.args.matchAll(/\$\{(\w+)[^}]*\}/g)) expect(declared, `\${${name}} in ${ins.cmd} of stage ${stage.name}`).toContain(name)
      }
    }
  })

  it('carries OCI labels', () => {
    const labels = only(runtime, 'LABEL').map((i) => i.args).join(' ')
    for (const key of ['title', 'description', 'version', 'revision', 'created']) expect(labels).toContain(`org.opencontainers.image.${key}=`)
  })

  it('holds what the cache-warm CronJob runs: the built CLI and every package the sources import at run time', () => {
    const template = text('helm/report-gateway/templates/cronjob-cache-warm.yaml')
    const scripts = [...new Set([...template.matchAll(/node (dist\/\S+)\.js/g)].map((m) => m[1]!))]
    expect(scripts).toEqual(['dist/cli/warm'])
    // dist/ is tsc's output of src/ (tsconfig.build.json), which the image ships whole.
    for (const script of scripts) expect(existsSync(join(ROOT, script.replace(/^dist/, 'src') + '.ts')), script).toBe(true)
    expect(pkg.scripts.warm).toBe('node dist/cli/warm.js')
    // The runtime stage has production dependencies only: whatever src/ imports must be one.
    const sources = (readdirSync(join(ROOT, 'src'), { recursive: true }) as string[]).filter((f) => f.endsWith('.ts'))
    const imported = new Set<string>()
    for (const file of sources) {
      for (const m of text(join('src', file)).matchAll(/^import (?!type )[^;]*? from '([^'.][^']*)'/gm)) {
        const spec = m[1]!
        if (spec.startsWith('node:')) continue
        imported.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!)
      }
    }
    expect(imported).toContain('cli-progress')
    for (const name of imported) expect(Object.keys(pkg.dependencies), `${name} is a production dependency`).toContain(name)
  })
})
