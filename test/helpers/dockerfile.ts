import { cpSync, copyFileSync, lstatSync, mkdirSync, readdirSync } from 'node:fs'
import { dirname, join, posix } from 'node:path'

// The Dockerfile and .dockerignore as a build reads them, for the suites that check
// the image where there is no container engine: test/unit/dockerfile.test.ts reads them
// as text, test/slow/image-build.test.ts replays the build from them.

export interface Instruction {
  cmd: string
  args: string
  line: number
}

export interface Stage {
  name: string | null
  /** The base image (ARG defaults declared before the first FROM substituted), or an earlier stage's name. */
  base: string
  body: Instruction[]
}

/** Instructions with continuation lines joined; comments and parser directives left out. */
export function parseDockerfile(source: string): Instruction[] {
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

/** The ARGs declared before the first FROM, with their defaults. */
export function globalArgs(instructions: Instruction[]): Map<string, string> {
  const args = new Map<string, string>()
  for (const ins of instructions) {
    if (ins.cmd === 'FROM') break
    if (ins.cmd === 'ARG') {
      const [name, value = ''] = ins.args.split('=', 2) as [string, string?]
      args.set(name.trim(), value.trim())
    }
  }
  return args
}

/** Stages, with ARG defaults declared before the first FROM substituted into FROM. */
export function stagesOf(instructions: Instruction[]): Stage[] {
  const args = globalArgs(instructions)
  const stages: Stage[] = []
  for (const ins of instructions) {
    if (ins.cmd === 'ARG' && stages.length === 0) continue
    if (ins.cmd === 'FROM') {
      const m = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args)
      if (!m) throw new Error(`FROM at line ${ins.line}: cannot read "${ins.args}"`)
      stages.push({ name: m[2] ?? null, base: substitute(m[1]!, args), body: [] })
    } else {
      if (stages.length === 0) throw new Error(`${ins.cmd} at line ${ins.line} comes before any FROM`)
      stages[stages.length - 1]!.body.push(ins)
    }
  }
  return stages
}

/** `$NAME` and `${NAME}` (also `${NAME:-default}`) replaced from `vars`; unknown ones by '' (or their default), as Docker does. */
export function substitute(text: string, vars: Map<string, string>): string {
  return text.replace(/\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)/g, (_all, a?: string, dflt?: string, b?: string) => {
    const value = vars.get((a ?? b)!)
    return value !== undefined && value !== '' ? value : (dflt ?? value ?? '')
  })
}

export interface Copy {
  from: string | null
  /** Flags other than --from (--chown, --chmod, --link, ...), as written. */
  flags: string[]
  sources: string[]
  dest: string
  line: number
}

/** The COPY and ADD instructions of a stage (shell or JSON form). */
export function copiesOf(stage: Stage): Copy[] {
  return stage.body
    .filter((i) => i.cmd === 'COPY' || i.cmd === 'ADD')
    .map((i) => {
      const words = i.args.split(/\s+/)
      const flags = words.filter((w) => w.startsWith('--'))
      const rest = i.args.slice(flags.reduce((at, f) => i.args.indexOf(f, at) + f.length, 0)).trim()
      const paths = rest.startsWith('[') ? (JSON.parse(rest) as string[]) : rest.split(/\s+/)
      const from = flags.find((f) => f.startsWith('--from='))?.slice('--from='.length) ?? null
      return { from, flags: flags.filter((f) => !f.startsWith('--from=')), sources: paths.slice(0, -1), dest: paths[paths.length - 1]!, line: i.line }
    })
}

/** A RUN instruction's command: its flags (--mount=…, --network=…) apart, the shell form as one string or the exec form's words. */
export function runCommandOf(ins: Instruction): { flags: string[]; shell: string | null; exec: string[] | null } {
  let rest = ins.args
  const flags: string[] = []
  for (let m = /^(--\S+)\s+/.exec(rest); m; m = /^(--\S+)\s+/.exec(rest)) {
    flags.push(m[1]!)
    rest = rest.slice(m[0].length)
  }
  if (rest.startsWith('[')) return { flags, shell: null, exec: JSON.parse(rest) as string[] }
  return { flags, shell: rest, exec: null }
}

/** Exec-form JSON of CMD/ENTRYPOINT/HEALTHCHECK CMD. */
export function execForm(args: string): string[] {
  const json = args.slice(args.indexOf('['))
  return JSON.parse(json) as string[]
}

/**
 * The variables ENV sets (`ENV A=1 B="two words"`, or the old `ENV A value`), in order,
 * with `${…}` replaced from `vars` (the stage's ARGs and the ENVs before).
 */
export function envOf(args: string, vars: Map<string, string>): [string, string][] {
  const old = /^(\w+)\s+(?!\w+=)(.*)$/.exec(args)
  if (old && !args.includes('=')) return [[old[1]!, substitute(old[2]!, vars)]]
  const out: [string, string][] = []
  for (const m of args.matchAll(/(\w+)=("(?:[^"\\]|\\.)*"|'[^']*'|\S*)/g)) {
    let value = m[2]!
    if (value.startsWith('"')) value = value.slice(1, -1).replace(/\\(.)/g, '$1')
    else if (value.startsWith("'")) value = value.slice(1, -1)
    out.push([m[1]!, substitute(value, vars)])
  }
  return out
}

// ---- .dockerignore, by Docker's rules (moby's ignorefile and patternmatcher, which BuildKit uses)

/**
 * The patterns of a .dockerignore: a line starting with `#` is a comment (before any
 * trimming); lines are trimmed, empty ones skipped; `!` re-includes (spaces after it
 * are dropped); each pattern is cleaned like Go's filepath.Clean (no `./`, no trailing
 * slash, `..` resolved) and loses a leading `/`.
 */
export function readDockerignore(text: string): string[] {
  const patterns: string[] = []
  for (const [i, raw] of text.split('\n').entries()) {
    let line = raw.replace(/\r$/, '')
    if (i === 0) line = line.replace(/^\uFEFF/, '')
    if (line.startsWith('#')) continue
    let pattern = line.trim()
    if (pattern === '') continue
    const invert = pattern.startsWith('!')
    if (invert) pattern = pattern.slice(1).trim()
    if (pattern !== '') {
      pattern = cleanPath(pattern)
      if (pattern.length > 1 && pattern.startsWith('/')) pattern = pattern.slice(1)
    }
    patterns.push(invert ? `!${pattern}` : pattern)
  }
  return patterns
}

/** Go's filepath.Clean on slash paths. */
export function cleanPath(path: string): string {
  if (path === '') return '.'
  const normal = posix.normalize(path)
  return normal.length > 1 && normal.endsWith('/') ? normal.slice(0, -1) : normal
}

interface Pattern {
  exclusion: boolean
  cleaned: string
  match: (path: string) => boolean
}

/** A compiled pattern: an exact path, a prefix (`dir/**`), a suffix (`**` first) or a regular expression. */
function compilePattern(raw: string): Pattern {
  let p = cleanPath(raw.trim())
  const exclusion = p.startsWith('!')
  if (exclusion) {
    if (p.length === 1) throw new Error('illegal exclusion pattern: "!"')
    p = p.slice(1)
  }
  const chars = [...p]
  let regex = '^'
  let type: 'exact' | 'prefix' | 'suffix' | 'regexp' = 'exact'
  for (let i = 0, at = 0; at < chars.length; i++) {
    const ch = chars[at++]!
    if (ch === '*') {
      if (chars[at] === '*') {
        at++
        if (chars[at] === '/') at++
        if (at >= chars.length) {
          if (type === 'exact') type = 'prefix'
          else {
            regex += '.*'
            type = 'regexp'
          }
        } else {
          regex += '(.*/)?'
          type = 'regexp'
        }
        if (i === 0) type = 'suffix'
      } else {
        regex += '[^/]*'
        type = 'regexp'
      }
    } else if (ch === '?') {
      regex += '[^/]'
      type = 'regexp'
    } else if ('.+()|{}$'.includes(ch)) {
      regex += `\\${ch}`
    } else if (ch === '\\') {
      if (at < chars.length) {
        regex += `\\${chars[at++]!}`
        type = 'regexp'
      } else regex += '\\\\'
    } else if (ch === '[' || ch === ']') {
      regex += ch
      type = 'regexp'
    } else {
      regex += ch
    }
  }
  const cleaned = p
  let match: (path: string) => boolean
  if (type === 'exact') match = (path) => path === cleaned
  else if (type === 'prefix') match = (path) => path.startsWith(cleaned.slice(0, -2))
  else if (type === 'suffix') {
    const suffix = cleaned.slice(2)
    match = (path) => path.endsWith(suffix) || (suffix.startsWith('/') && path === suffix.slice(1))
  } else {
    const re = new RegExp(`${regex}$`, 'u')
    match = (path) => re.test(path)
  }
  return { exclusion, cleaned, match }
}

/**
 * Whether `.dockerignore`'s patterns keep `path` (slash-separated, relative to the
 * context) out of the build context: patterns are read in order, each one that matches
 * the path or one of its parent folders decides anew (`!` re-includes), the last one wins.
 */
export function dockerignoreMatcher(patterns: string[]): (path: string) => boolean {
  const compiled = patterns.filter((p) => p.trim() !== '').map(compilePattern)
  return (file: string) => {
    const path = cleanPath(file)
    if (path === '.') return false
    const parent = posix.dirname(path)
    const parentDirs = parent.split('/')
    let matched = false
    for (const pattern of compiled) {
      // An inclusion is skipped once the path matched; an exclusion until it has.
      if (pattern.exclusion !== matched) continue
      let match = pattern.match(path)
      if (!match && parent !== '.') {
        for (let i = 0; i < parentDirs.length && !match; i++) match = pattern.match(parentDirs.slice(0, i + 1).join('/'))
      }
      if (match) matched = !pattern.exclusion
    }
    return matched
  }
}

/** Whether a folder the patterns keep out could still hold a path that an exclusion (`!`) brings back in. */
function mayHoldExceptions(dir: string, patterns: string[]): boolean {
  return patterns.some((p) => {
    if (!p.startsWith('!')) return false
    const pattern = p.slice(1)
    // A wildcard could match anywhere below; a literal path only below its own parents.
    return /[*?[\\]/.test(pattern) || pattern.startsWith(`${dir}/`)
  })
}

/**
 * The files of the build context rooted at `root`, as `docker build` sends them: every
 * file not ignored by the patterns, as slash paths relative to `root`. Symbolic links
 * are listed, not followed (Docker sends them as links).
 */
export function contextFiles(root: string, patterns: string[]): string[] {
  const ignored = dockerignoreMatcher(patterns)
  const files: string[] = []
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = dir ? `${dir}/${entry.name}` : entry.name
      if (entry.isDirectory()) {
        if (ignored(path) && !mayHoldExceptions(path, patterns)) continue
        walk(path)
      } else if (!ignored(path)) files.push(path)
    }
  }
  walk('')
  return files.sort()
}

// ---- replaying a build without a container engine

/** Go's filepath.Match on one slash path (what COPY does with a wildcard source). */
function globMatches(pattern: string, path: string): boolean {
  const re = pattern.replace(/[.+^${}()|\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]')
  return new RegExp(`^${re}$`).test(path)
}

/**
 * Copies what one COPY instruction copies from the build context (its files listed in
 * `context`, read from `root`) into `stageRoot`, the stage's `/`, with the stage's
 * WORKDIR `workdir` for a relative destination. Docker's rules: a folder's contents are
 * copied into the destination, a file lands in it when it ends in `/` or there are
 * several sources; a source that matches nothing fails the build.
 */
export function replayCopyFromContext(copy: Copy, root: string, context: string[], stageRoot: string, workdir: string): void {
  const destAbs = copy.dest.startsWith('/') ? copy.dest : posix.join(workdir, copy.dest)
  const intoDir = copy.dest.endsWith('/') || copy.dest === '.' || copy.sources.length > 1 || /[*?[]/.test(copy.sources.join(''))
  for (const raw of copy.sources) {
    const source = cleanPath(raw.replace(/^\/+/, ''))
    const wildcard = /[*?[]/.test(source)
    const matched = wildcard ? [...new Set(context.map((f) => f.split('/').slice(0, source.split('/').length).join('/')))].filter((p) => globMatches(source, p)) : [source]
    let copied = 0
    for (const base of matched) {
      const below = context.filter((f) => f.startsWith(`${base}/`))
      if (below.length > 0) {
        // A folder: its contents go into the destination.
        for (const file of below) copyContextFile(root, file, join(stageRoot, destAbs, file.slice(base.length + 1)))
        copied += below.length
      } else if (context.includes(base)) {
        copyContextFile(root, base, join(stageRoot, intoDir ? posix.join(destAbs, posix.basename(base)) : destAbs))
        copied++
      }
    }
    if (copied === 0) throw new Error(`COPY at line ${copy.line}: "${raw}" is not in the build context (a build fails: not found)`)
  }
}

function copyContextFile(root: string, file: string, target: string): void {
  mkdirSync(dirname(target), { recursive: true })
  if (lstatSync(join(root, file)).isSymbolicLink()) cpSync(join(root, file), target, { verbatimSymlinks: true })
  else copyFileSync(join(root, file), target)
}

/** COPY --from=<stage>: a path of that stage's filesystem (rooted at `fromRoot`) into this one's. */
export function replayCopyFromStage(copy: Copy, fromRoot: string, fromWorkdir: string, stageRoot: string, workdir: string): void {
  const destAbs = copy.dest.startsWith('/') ? copy.dest : posix.join(workdir, copy.dest)
  const intoDir = copy.dest.endsWith('/') || copy.sources.length > 1
  for (const raw of copy.sources) {
    const sourceAbs = raw.startsWith('/') ? raw : posix.join(fromWorkdir, raw)
    const from = join(fromRoot, sourceAbs)
    let stat
    try {
      stat = lstatSync(from)
    } catch {
      throw new Error(`COPY --from=${copy.from} at line ${copy.line}: ${sourceAbs} does not exist in that stage`)
    }
    const target = stat.isDirectory() ? join(stageRoot, destAbs) : join(stageRoot, intoDir ? posix.join(destAbs, posix.basename(sourceAbs)) : destAbs)
    mkdirSync(stat.isDirectory() ? target : dirname(target), { recursive: true })
    cpSync(from, target, { recursive: true, verbatimSymlinks: true })
  }
}
