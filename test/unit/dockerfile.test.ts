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
import { contextFiles, copiesOf, dockerignoreMatcher, execForm, parseDockerfile, readDockerignore, runCommandOf, stagesOf, type Stage } from '../helpers/dockerfile.js'
import { imageMemoryEnv } from '../../scripts/image-env.mjs'
import { envOf, install } from '../helpers/chart-manifests.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const text = (path: string) => readFileSync(join(ROOT, path), 'utf8')

const instructions = parseDockerfile(text('Dockerfile'))
const stages = stagesOf(instructions)
const runtime = stages[stages.length - 1]!
const dockerignore = readDockerignore(text('.dockerignore'))
const ignoredByDockerignore = (path: string, patterns: string[]) => dockerignoreMatcher(patterns)(path)
const pkg = JSON.parse(text('package.json')) as { main: string; scripts: Record<string, string>; engines: { node: string }; dependencies: Record<string, string> }
const only = (stage: Stage, cmd: string) => stage.body.filter((i) => i.cmd === cmd)

/** The root package's npm scripts a command runs (`npm run X`, `npm run-script X`, `npm start`, `npm test`), workspace runs left out. */
function npmRunsOf(command: string): string[] {
  const names: string[] = []
  for (const m of command.matchAll(/\bnpm\s+(?:run|run-script)((?:\s+-{1,2}[\w-]+(?:=\S+)?)*)\s+([\w:.-]+)([^&|;]*)/g)) {
    if (!/(?:^|\s)(?:-w|--workspace)\b/.test(`${m[1]} ${m[3]}`)) names.push(m[2]!)
  }
  for (const m of command.matchAll(/\bnpm\s+(start|test)\b/g)) names.push(m[1]!)
  return names
}

/** A root npm script's commands (split at `&&`, `||`, `;`), and those of the root scripts it runs in turn, with its pre- and post-scripts. */
function scriptCommands(name: string, seen = new Set<string>()): string[] {
  if (seen.has(name)) return []
  seen.add(name)
  const out: string[] = []
  for (const hook of [`pre${name}`, name, `post${name}`]) {
    const script = pkg.scripts[hook]
    if (script === undefined) {
      if (hook === name) throw new Error(`npm script ${name} does not exist`)
      continue
    }
    for (const step of script.split(/&&|\|\||;/).map((s) => s.trim())) {
      out.push(step)
      for (const inner of npmRunsOf(step)) out.push(...scriptCommands(inner, seen))
    }
  }
  return out
}

/**
 * What would let a failing step pass unseen, or print nothing of why: npm told to be
 * silent (its error lines go too, and "No workspaces found" says nothing then), a
 * status thrown away (`|| true`, `|| :`), errors sent to /dev/null, a pipe whose first
 * command's status is lost (no `set -o pipefail`).
 */
function hidingProblems(command: string): string[] {
  const problems: string[] = []
  if (/\bnpm\b[^&|;]*\s(?:--silent|-s|--loglevel[= ]silent|--quiet|-q)\b/.test(command)) problems.push('npm is silenced: its error lines are hidden')
  if (/\|\|\s*(?:true|:)(?:\s|$)|;\s*true\s*$/.test(command)) problems.push('the exit status is thrown away')
  if (/2>\s*\/dev\/null|&>\s*\/dev\/null/.test(command)) problems.push('error output is thrown away')
  if (/(?<!\|)\|(?!\|)/.test(command) && !/set -o pipefail|set -[a-z]*o pipefail/.test(command)) problems.push('a pipe without set -o pipefail')
  return problems
}

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
    expect(envOf(install()).get('ADMIN_HOST')).toEqual({ name: 'ADMIN_HOST', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } })
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
    // Every tsconfig the build step names (the server's, the console's), through the npm
    // scripts it runs, and everything each extends must be in the stage: copied itself,
    // or under a copied folder.
    const inStage = (path: string) => copiedBefore.some((source) => path === source || path.startsWith(`${source}/`))
    const named = npmRunsOf(body[run]!.args).flatMap((script) => scriptCommands(script)).flatMap((c) => [...c.matchAll(/tsc -p (\S+)/g)].map((m) => m[1]!))
    expect(named).toEqual(['tsconfig.build.json', 'src/console'])
    for (const project of named) {
      for (let config: string | undefined = project.endsWith('.json') ? project : `${project}/tsconfig.json`; config; ) {
        expect(inStage(config), `${config} is copied before the build`).toBe(true)
        const parsed = JSON.parse(text(config)) as { extends?: string }
        config = parsed.extends === undefined ? undefined : posix.join(posix.dirname(config), parsed.extends)
      }
    }
  })

  it('no build step hides its failure: no silenced npm, no `|| true`, no pipe without pipefail, in the RUN lines and the npm scripts they run', () => {
    for (const stage of stages) {
      for (const ins of only(stage, 'RUN')) {
        const { shell, exec } = runCommandOf(ins)
        const command = shell ?? exec!.join(' ')
        for (const problem of hidingProblems(command)) expect.soft(problem, `RUN at line ${ins.line} of stage ${stage.name}: ${command}`).toBeNull()
        for (const script of npmRunsOf(command)) {
          for (const step of scriptCommands(script)) for (const problem of hidingProblems(step)) expect.soft(problem, `npm script ${script}, run by line ${ins.line}: ${step}`).toBeNull()
        }
      }
    }
  })

  it('every workspace a build step names is in its stage (a missing one is "No workspaces found", exit 1)', () => {
    const workspaces = new Map<string, string>()
    for (const dir of readdirSync(join(ROOT, 'packages'))) {
      const manifest = join('packages', dir, 'package.json')
      if (existsSync(join(ROOT, manifest))) workspaces.set((JSON.parse(text(manifest)) as { name: string }).name, `packages/${dir}`)
    }
    for (const stage of stages) {
      for (const [index, ins] of stage.body.entries()) {
        if (ins.cmd !== 'RUN') continue
        const copied = copiesOf({ ...stage, body: stage.body.slice(0, index) }).filter((c) => c.from === null).flatMap((c) => c.sources)
        const steps = [ins.args, ...npmRunsOf(ins.args).flatMap((script) => scriptCommands(script))]
        for (const step of steps) {
          for (const m of step.matchAll(/(?:^|\s)(?:-w|--workspace)(?:=|\s+)(\S+)/g)) {
            const folder = workspaces.get(m[1]!) ?? m[1]!
            expect(copied.some((source) => folder === source || folder.startsWith(`${source}/`)), `${step} (line ${ins.line}) needs ${folder} in stage ${stage.name}`).toBe(true)
            expect(ignoredByDockerignore(`${folder}/package.json`, dockerignore), `${folder} is in the build context`).toBe(false)
          }
          if (/(?:^|\s)(?:--workspaces|-ws)\b/.test(step)) throw new Error(`${step}: every workspace, name each one instead`)
        }
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

  // The runtime stage copies config/ whole: a file .gitignore keeps out of the repository but
  // left under src/ or config/ (a team key in clear from `npm run keys -- new | tee`, a log, an
  // .env) went into the context, and from config/ into the image.
  it('keeps local state out of the build context inside the folders it lets in (src/, config/)', () => {
    for (const path of ['config/growth-key.txt', 'src/growth-key.txt', 'config/gateway.log', 'src/cli/npm-debug.log', 'config/.env', 'src/.env.local', 'config/local.yaml', 'config/teams.yaml']) {
      expect(ignoredByDockerignore(path, dockerignore), path).toBe(true)
    }
    for (const path of ['config/default.yaml', 'src/main.ts', 'src/config/validators.generated.js']) expect(ignoredByDockerignore(path, dockerignore), path).toBe(false)
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
    // The allocator's fixed mmap threshold: socket reads (16 KiB over TLS) and an answer's blocks go back to the kernel when freed.
    expect(env).toMatch(/(?:^|\s)MALLOC_MMAP_THRESHOLD_=16384(?:\s|$)/)
    // The soak and the memory test run the gateway with exactly these lines.
    expect(imageMemoryEnv(join(ROOT, 'Dockerfile'))).toEqual({ NODE_OPTIONS: '--max-semi-space-size=16', MALLOC_MMAP_THRESHOLD_: '16384' })
  })

  it("starts node on dist/main.js directly (the package's start command, without npm)", () => {
    const cmd = only(runtime, 'CMD')
    expect(cmd).toHaveLength(1)
    expect(execForm(cmd[0]!.args)).toEqual(['node', 'dist/main.js'])
    // npm start runs the same, its shell replaced by Node (exec) so that npm's signals reach it.
    expect(pkg.scripts.start).toBe('exec node dist/main.js')
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
    // `npm run warm` runs the same file, exec'd so that a SIGTERM to npm reaches it.
    expect(pkg.scripts.warm).toBe('exec node dist/cli/warm.js')
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

describe('.dockerignore as Docker reads it (the replay of the build in test/slow/image-build.test.ts relies on it)', () => {
  const ignored = (lines: string, path: string) => dockerignoreMatcher(readDockerignore(lines))(path)

  it("reads comments, blanks, `!`, leading and trailing slashes and `./` as Docker's ignore file reader does", () => {
    expect(readDockerignore('# a comment\n\n  *.log  \n! keep.log\n/abs/path/\n./here/..//there\n #not-a-comment\n')).toEqual(['*.log', '!keep.log', 'abs/path', 'there', '#not-a-comment'])
  })

  it("matches Docker's documented examples", () => {
    const docs = '*/temp*\n*/*/temp*\ntemp?\n'
    expect(ignored(docs, 'somedir/temporary.txt')).toBe(true)
    expect(ignored(docs, 'somedir/temp/file')).toBe(true)
    expect(ignored(docs, 'somedir/subdir/temporary.txt')).toBe(true)
    expect(ignored(docs, 'tempa')).toBe(true)
    expect(ignored(docs, 'temporary.txt')).toBe(false)
    expect(ignored(docs, 'temp')).toBe(false)
    expect(ignored('**/*.go', 'main.go')).toBe(true)
    expect(ignored('**/*.go', 'a/b/c.go')).toBe(true)
    expect(ignored('**/*.go', 'a/b/c.gox')).toBe(false)
    // The last pattern that matches decides.
    const md = '*.md\n!README*.md\nREADME-secret.md\n'
    expect(ignored(md, 'CHANGES.md')).toBe(true)
    expect(ignored(md, 'README.md')).toBe(false)
    expect(ignored(md, 'README-secret.md')).toBe(true)
  })

  it('a pattern matching a parent folder takes its files along, and `!folder/` brings them back', () => {
    expect(ignored('node_modules', 'node_modules/x/index.js')).toBe(true)
    expect(ignored('*\n!src/', 'src/a/b.ts')).toBe(false)
    expect(ignored('*\n!src/', 'srcx/b.ts')).toBe(true)
    expect(ignored('*\n!src/\nsrc/**/*.test.ts', 'src/a/b.test.ts')).toBe(true)
    expect(ignored('dist/**', 'dist/main.js')).toBe(true)
    expect(ignored('/foo/bar', 'foo/bar/baz')).toBe(true)
    expect(ignored('**/secret', 'secret')).toBe(true)
    expect(ignored('a.b', 'axb')).toBe(false)
    expect(ignored('file[0-9].txt', 'file7.txt')).toBe(true)
  })

  it("the repository's build context holds what the stages copy and nothing of the repository's local state", () => {
    const context = contextFiles(ROOT, dockerignore)
    for (const path of ['package.json', 'package-lock.json', 'src/main.ts', 'config/default.yaml']) expect(context).toContain(path)
    for (const prefix of ['node_modules/', 'dist/', 'test/', '.git', 'helm/', 'docs/', '.env']) expect(context.filter((f) => f.startsWith(prefix)), prefix).toEqual([])
    // Every file of the context is used: it is under a path some COPY takes from the context.
    const sources = stages.flatMap(copiesOf).filter((c) => c.from === null).flatMap((c) => c.sources)
    for (const file of context) expect(sources.some((s) => file === s || file.startsWith(`${s}/`)), `${file} is copied by some stage`).toBe(true)
  })
})
