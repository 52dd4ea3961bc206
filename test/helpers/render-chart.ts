/**
 * Renders helm/report-gateway the way `helm template` would, for the chart tests.
 *
 * Why this exists: the machines that run `npm test` have no helm binary, and the chart
 * must still be checked (valid YAML, the contract's env names, ports, probes). So this
 * is a small Go-template engine for exactly the subset the chart's templates use, and
 * it fails loudly on anything outside it, so a template that drifts from the subset
 * breaks the test instead of rendering wrongly:
 *
 * - actions `{{ }}` with trim markers `{{- ` / ` -}}`, comments `{{/* *\/}}`
 * - `.`, `.A.b` fields, `$`, `$var.a.b`, `$x := pipeline`, `$x = pipeline`, `( pipeline )`
 * - `if` / `else if` / `else` / `end`, `with` (rebinds `.`), `range [$k, $v :=]` (maps in
 *   sorted key order, as Go does), `define` (any file; `_*.tpl` files only define)
 * - functions: include, default, quote, nindent, indent, toYaml, sha256sum, b64enc,
 *   required, fail, trunc, trimSuffix, replace, contains, printf (%s %d %v %q), int, add, join,
 *   deepCopy, set, unset, and, or, not, eq, ne, gt, lt
 * - `.Values` (values.yaml deep-merged with overrides; null deletes a key, as in helm),
 *   `.Release.Name/Namespace/Service`, `.Chart.Name/Version/AppVersion`, `.Template`,
 *   `.Files.Get "path"` (a file of the chart outside templates/, "" when there is none)
 * - values are validated against values.schema.json first, as helm does
 *
 * Where helm's behaviour is odd it is copied, so the tests see what helm would: numbers
 * from values.yaml are float64 in helm and print like Go's %v (1000000 prints 1e+06),
 * `printf "%s"` of a number prints `%!s(float64=...)`, a missing value prints as empty,
 * and a field of a missing value is an error ("nil pointer evaluating").
 * toYaml sorts map keys like sigs.k8s.io/yaml; its quoting style may differ from helm's
 * but not the data.
 */
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import { Ajv, type ValidateFunction } from 'ajv'
import { parse, parseAllDocuments, stringify } from 'yaml'

export type Values = Record<string, unknown>

export interface Manifest {
  apiVersion: string
  kind: string
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> }
  [field: string]: unknown
}

export interface RenderOptions {
  /** Merged over values.yaml like `helm --values`. */
  values?: Values
  releaseName?: string
  namespace?: string
}

export interface RenderedChart {
  values: Values
  /** Rendered text of every template file, by path under templates/. */
  files: Record<string, string>
  /** Every non-empty YAML document of the rendered templates (NOTES.txt excluded). */
  manifests: Manifest[]
  notes: string
}

export class TemplateError extends Error {
  override name = 'TemplateError'
}

// ---------------------------------------------------------------- the chart

export function renderChart(chartDir: string, options: RenderOptions = {}): RenderedChart {
  const chartMeta = parse(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8')) as Record<string, unknown>
  const defaults = (parse(readFileSync(join(chartDir, 'values.yaml'), 'utf8')) ?? {}) as Values
  const values = mergeValues(defaults, options.values ?? {})
  const schemaErrors = validateValues(chartDir, values)
  if (schemaErrors.length > 0) throw new TemplateError(`values don't meet the schema:\n${schemaErrors.join('\n')}`)

  const templatesDir = join(chartDir, 'templates')
  const paths = listFiles(templatesDir).sort()
  const defines = new Map<string, Node[]>()
  const parsed = new Map<string, Node[]>()
  for (const path of paths) {
    const rel = relative(templatesDir, path).split(sep).join('/')
    parsed.set(rel, parseTemplate(readFileSync(path, 'utf8'), rel, defines))
  }

  const chartName = String(chartMeta.name)
  const root = {
    Values: values,
    Release: {
      Name: options.releaseName ?? 'rgw',
      Namespace: options.namespace ?? 'reports',
      Service: 'Helm',
      IsInstall: true,
      IsUpgrade: false,
      Revision: 1,
    },
    Chart: chartFields(chartMeta),
    Capabilities: { KubeVersion: { Version: 'v1.31.0', Major: '1', Minor: '31' } },
    Template: { Name: '', BasePath: `${chartName}/templates` },
    Files: chartFiles(chartDir),
  }

  const files: Record<string, string> = {}
  const manifests: Manifest[] = []
  let notes = ''
  for (const [rel, nodes] of parsed) {
    const base = rel.split('/').pop() ?? rel
    if (base.startsWith('_')) continue // helpers: defines only, never rendered
    const data = { ...root, Template: { Name: `${chartName}/templates/${rel}`, BasePath: `${chartName}/templates` } }
    const text = execute(nodes, data, defines)
    files[rel] = text
    if (rel === 'NOTES.txt') {
      notes = text
      continue
    }
    manifests.push(...parseManifests(text, rel))
  }
  return { values, files, manifests, notes }
}

const validators = new Map<string, ValidateFunction>()

/** Errors of values against the chart's values.schema.json (draft-07), like helm's check. */
export function validateValues(chartDir: string, values: unknown): string[] {
  let validate = validators.get(chartDir)
  if (!validate) {
    const schema = JSON.parse(readFileSync(join(chartDir, 'values.schema.json'), 'utf8')) as object
    validate = new Ajv({ allErrors: true, strictTypes: false }).compile(schema)
    validators.set(chartDir, validate)
  }
  if (validate(values)) return []
  return (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'}: ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`)
}

/** helm's values merge: maps merge deeply, anything else replaces, null removes the key. */
export function mergeValues(base: Values, override: Values): Values {
  const out: Values = structuredClone(base)
  for (const [key, value] of Object.entries(override)) {
    if (value === null) {
      delete out[key]
    } else if (isMap(value) && isMap(out[key])) {
      out[key] = mergeValues(out[key], value)
    } else {
      out[key] = structuredClone(value)
    }
  }
  return out
}

function chartFields(meta: Record<string, unknown>): Record<string, unknown> {
  const fields: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(meta)) {
    fields[key === 'apiVersion' ? 'APIVersion' : key[0]!.toUpperCase() + key.slice(1)] = value
  }
  return fields
}

/**
 * helm's `.Files`: the chart's other files (dashboards, rules, ...). Templates, Chart.yaml,
 * values.yaml and values.schema.json are not among them; a missing file reads as "".
 */
function chartFiles(chartDir: string): { Get: (name: unknown) => string } {
  const special = new Set(['Chart.yaml', 'Chart.lock', 'values.yaml', 'values.schema.json', 'requirements.yaml', 'requirements.lock'])
  return {
    Get: (name) => {
      const rel = String(name)
      const parts = rel.split('/')
      if (rel.startsWith('/') || parts.includes('..') || parts[0] === 'templates' || parts[0] === 'charts' || special.has(rel)) return ''
      try {
        return readFileSync(join(chartDir, ...parts), 'utf8')
      } catch {
        return ''
      }
    },
  }
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? listFiles(join(dir, entry.name)) : [join(dir, entry.name)],
  )
}

// helm splits a rendered file on lines starting with --- and drops empty documents.
function parseManifests(text: string, file: string): Manifest[] {
  const out: Manifest[] = []
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new TemplateError(`${file}: not valid YAML: ${doc.errors[0]!.message}\n${text}`)
    const value: unknown = doc.toJS()
    if (value === null || value === undefined) continue
    if (!isMap(value) || typeof value.kind !== 'string' || typeof value.apiVersion !== 'string') {
      throw new TemplateError(`${file}: a document without apiVersion and kind:\n${text}`)
    }
    out.push(value as unknown as Manifest)
  }
  return out
}

// ---------------------------------------------------------------- lexer

type Item = { kind: 'text'; text: string } | { kind: 'action'; src: string; where: string }

function lex(src: string, file: string): Item[] {
  const items: Item[] = []
  let pos = 0
  let trimNext = false
  const line = (at: number) => `${file}:${src.slice(0, at).split('\n').length}`
  while (pos < src.length) {
    const open = src.indexOf('{{', pos)
    let text = src.slice(pos, open === -1 ? src.length : open)
    if (trimNext) text = text.replace(/^\s+/, '')
    trimNext = false
    if (open === -1) {
      if (text) items.push({ kind: 'text', text })
      break
    }
    let inner = open + 2
    const trimLeft = /^-\s/.test(src.slice(inner, inner + 2))
    if (trimLeft) {
      text = text.replace(/\s+$/, '')
      inner += 1
    }
    if (text) items.push({ kind: 'text', text })
    const close = findClose(src, inner, line(open))
    let body = src.slice(inner, close)
    if (/\s-$/.test(body)) {
      trimNext = true
      body = body.slice(0, -1)
    }
    body = body.trim()
    if (body.startsWith('/*')) {
      if (!body.endsWith('*/')) throw new TemplateError(`${line(open)}: unclosed comment`)
    } else {
      items.push({ kind: 'action', src: body, where: line(open) })
    }
    pos = close + 2
  }
  return items
}

function findClose(src: string, from: number, where: string): number {
  let i = from
  while (i < src.length) {
    const c = src[i]
    if (src.startsWith('/*', i)) {
      const end = src.indexOf('*/', i + 2)
      if (end === -1) break
      i = end + 2
    } else if (c === '"' || c === '`') {
      i++
      while (i < src.length && src[i] !== c) i += src[i] === '\\' && c === '"' ? 2 : 1
      i++
    } else if (src.startsWith('}}', i)) {
      return i
    } else {
      i++
    }
  }
  throw new TemplateError(`${where}: unclosed action`)
}

type Tok =
  | { t: 'lit'; v: unknown }
  | { t: 'field'; path: string[] }
  | { t: 'var'; name: string; path: string[] }
  | { t: 'ident'; name: string }
  | { t: '(' | ')' | '|' | ':=' | '=' | ',' }

function tokenize(src: string, where: string): Tok[] {
  const toks: Tok[] = []
  let i = 0
  while (i < src.length) {
    const rest = src.slice(i)
    let m: RegExpMatchArray | null
    if ((m = rest.match(/^\s+/))) {
      i += m[0].length
    } else if ((m = rest.match(/^"(?:[^"\\]|\\.)*"/))) {
      toks.push({ t: 'lit', v: JSON.parse(m[0]) as string })
      i += m[0].length
    } else if ((m = rest.match(/^`[^`]*`/))) {
      toks.push({ t: 'lit', v: m[0].slice(1, -1) })
      i += m[0].length
    } else if ((m = rest.match(/^:=/))) {
      toks.push({ t: ':=' })
      i += 2
    } else if ((m = rest.match(/^[()|=,]/))) {
      toks.push({ t: m[0] as '(' | ')' | '|' | '=' | ',' })
      i += 1
    } else if ((m = rest.match(/^-?\d+(\.\d+)?/))) {
      toks.push({ t: 'lit', v: Number(m[0]) })
      i += m[0].length
    } else if ((m = rest.match(/^\$(\w*)((?:\.\w+)*)/))) {
      toks.push({ t: 'var', name: `$${m[1]}`, path: m[2] ? m[2].slice(1).split('.') : [] })
      i += m[0].length
    } else if ((m = rest.match(/^\.((?:\w+)(?:\.\w+)*)?/))) {
      toks.push({ t: 'field', path: m[1] ? m[1].split('.') : [] })
      i += m[0].length
    } else if ((m = rest.match(/^[A-Za-z_]\w*/))) {
      const name = m[0]
      if (name === 'true' || name === 'false') toks.push({ t: 'lit', v: name === 'true' })
      else if (name === 'nil') toks.push({ t: 'lit', v: null })
      else toks.push({ t: 'ident', name })
      i += name.length
    } else {
      throw new TemplateError(`${where}: cannot read ${JSON.stringify(rest.slice(0, 20))} in {{ ${src} }}`)
    }
  }
  return toks
}

// ---------------------------------------------------------------- parser

type Operand =
  | { k: 'lit'; v: unknown }
  | { k: 'field'; path: string[] }
  | { k: 'var'; name: string; path: string[] }
  | { k: 'ident'; name: string }
  | { k: 'sub'; pipe: Pipeline }

interface Pipeline {
  decl: string[]
  op: ':=' | '=' | null
  cmds: Operand[][]
  where: string
}

type Node =
  | { t: 'text'; text: string }
  | { t: 'action'; pipe: Pipeline }
  | ControlNode

interface ControlNode {
  t: 'if' | 'with' | 'range'
  pipe: Pipeline
  body: Node[]
  elseBody: Node[] | null
}

type Terminator = { kind: 'end' } | { kind: 'else'; elseIf: Pipeline | null } | null

class ItemStream {
  i = 0
  constructor(readonly items: Item[]) {}
  next(): Item | undefined {
    return this.items[this.i++]
  }
}

function parseTemplate(src: string, file: string, defines: Map<string, Node[]>): Node[] {
  const stream = new ItemStream(lex(src, file))
  const { nodes, term } = parseList(stream, defines)
  if (term) throw new TemplateError(`${file}: unexpected {{ ${term.kind} }}`)
  return nodes
}

function parseList(stream: ItemStream, defines: Map<string, Node[]>): { nodes: Node[]; term: Terminator } {
  const nodes: Node[] = []
  for (let item = stream.next(); item; item = stream.next()) {
    if (item.kind === 'text') {
      nodes.push({ t: 'text', text: item.text })
      continue
    }
    const toks = tokenize(item.src, item.where)
    const head = toks[0]
    const keyword = head?.t === 'ident' ? head.name : null
    if (keyword === 'end') return { nodes, term: { kind: 'end' } }
    if (keyword === 'else') {
      const second = toks[1]
      if (second?.t === 'ident' && second.name === 'if') return { nodes, term: { kind: 'else', elseIf: parsePipeline(toks.slice(2), item.where) } }
      if (toks.length > 1) throw new TemplateError(`${item.where}: only "else" and "else if" are supported`)
      return { nodes, term: { kind: 'else', elseIf: null } }
    }
    if (keyword === 'if' || keyword === 'with' || keyword === 'range') {
      nodes.push(parseControl(keyword, parsePipeline(toks.slice(1), item.where), stream, defines, item.where))
    } else if (keyword === 'define') {
      const name = toks[1]
      if (name?.t !== 'lit' || typeof name.v !== 'string' || toks.length !== 2) throw new TemplateError(`${item.where}: define needs one name`)
      const body = parseList(stream, defines)
      if (body.term?.kind !== 'end') throw new TemplateError(`${item.where}: define ${name.v} without end`)
      defines.set(name.v, body.nodes)
    } else if (keyword === 'template' || keyword === 'block' || keyword === 'break' || keyword === 'continue') {
      throw new TemplateError(`${item.where}: "${keyword}" is not supported by the test renderer; use include`)
    } else {
      nodes.push({ t: 'action', pipe: parsePipeline(toks, item.where) })
    }
  }
  return { nodes, term: null }
}

function parseControl(kind: 'if' | 'with' | 'range', pipe: Pipeline, stream: ItemStream, defines: Map<string, Node[]>, where: string): Node {
  const { nodes: body, term } = parseList(stream, defines)
  if (!term) throw new TemplateError(`${where}: ${kind} without end`)
  if (term.kind === 'end') return { t: kind, pipe, body, elseBody: null }
  if (term.elseIf) {
    if (kind !== 'if') throw new TemplateError(`${where}: "else if" only after if`)
    // `else if` shares the end of the first if.
    return { t: kind, pipe, body, elseBody: [parseControl('if', term.elseIf, stream, defines, where)] }
  }
  const rest = parseList(stream, defines)
  if (rest.term?.kind !== 'end') throw new TemplateError(`${where}: ${kind} ... else without end`)
  return { t: kind, pipe, body, elseBody: rest.nodes }
}

function parsePipeline(toks: Tok[], where: string): Pipeline {
  const { pipe, next } = parsePipelineAt(toks, 0, where)
  if (next !== toks.length) throw new TemplateError(`${where}: unexpected ${JSON.stringify(toks[next])}`)
  return pipe
}

function parsePipelineAt(toks: Tok[], start: number, where: string): { pipe: Pipeline; next: number } {
  let i = start
  const decl: string[] = []
  let op: Pipeline['op'] = null
  // $x := ..., $x = ..., $k, $v := ...
  const a = toks[i]
  const b = toks[i + 1]
  if (a?.t === 'var' && a.path.length === 0 && (b?.t === ':=' || b?.t === '=')) {
    decl.push(a.name)
    op = b.t
    i += 2
  } else if (a?.t === 'var' && b?.t === ',' && toks[i + 2]?.t === 'var' && toks[i + 3]?.t === ':=') {
    decl.push(a.name, (toks[i + 2] as { name: string }).name)
    op = ':='
    i += 4
  }
  const cmds: Operand[][] = []
  let cmd: Operand[] = []
  while (i < toks.length) {
    const tok = toks[i]!
    if (tok.t === ')') break
    if (tok.t === '|') {
      if (cmd.length === 0) throw new TemplateError(`${where}: empty command before |`)
      cmds.push(cmd)
      cmd = []
      i++
      continue
    }
    if (tok.t === '(') {
      const sub = parsePipelineAt(toks, i + 1, where)
      if (toks[sub.next]?.t !== ')') throw new TemplateError(`${where}: unclosed (`)
      cmd.push({ k: 'sub', pipe: sub.pipe })
      i = sub.next + 1
      continue
    }
    if (tok.t === 'lit') cmd.push({ k: 'lit', v: tok.v })
    else if (tok.t === 'field') cmd.push({ k: 'field', path: tok.path })
    else if (tok.t === 'var') cmd.push({ k: 'var', name: tok.name, path: tok.path })
    else if (tok.t === 'ident') cmd.push({ k: 'ident', name: tok.name })
    else throw new TemplateError(`${where}: unexpected ${tok.t}`)
    i++
  }
  if (cmd.length > 0) cmds.push(cmd)
  if (cmds.length === 0) throw new TemplateError(`${where}: empty pipeline`)
  return { pipe: { decl, op, cmds, where }, next: i }
}

// ---------------------------------------------------------------- execution

interface Scope {
  dot: unknown
  vars: Map<string, unknown>[]
  defines: Map<string, Node[]>
  depth: number
}

const NONE = Symbol('no piped value')

function execute(nodes: Node[], data: unknown, defines: Map<string, Node[]>, depth = 0): string {
  if (depth > 50) throw new TemplateError('include nested more than 50 deep')
  const out: string[] = []
  run(nodes, { dot: data, vars: [new Map([['$', data]])], defines, depth }, out)
  return out.join('')
}

function run(nodes: Node[], scope: Scope, out: string[]): void {
  for (const node of nodes) {
    if (node.t === 'text') {
      out.push(node.text)
    } else if (node.t === 'action') {
      const value = evalPipeline(node.pipe, scope)
      if (node.pipe.decl.length === 0) out.push(print(value))
    } else if (node.t === 'if' || node.t === 'with') {
      const inner: Scope = { ...scope, vars: [...scope.vars, new Map()] }
      const value = evalPipeline(node.pipe, inner)
      if (truth(value)) run(node.body, node.t === 'with' ? { ...inner, dot: value } : inner, out)
      else if (node.elseBody) run(node.elseBody, inner, out)
    } else {
      runRange(node, scope, out)
    }
  }
}

function runRange(node: ControlNode, scope: Scope, out: string[]): void {
  const { decl } = node.pipe
  const value = evalPipeline({ ...node.pipe, decl: [], op: null }, scope)
  let entries: [unknown, unknown][]
  if (Array.isArray(value)) entries = value.map((v, i) => [i, v])
  else if (isMap(value)) entries = Object.keys(value).sort().map((k) => [k, value[k]])
  else if (value === null || value === undefined) entries = []
  else throw new TemplateError(`${node.pipe.where}: range over ${typeof value}`)
  if (entries.length === 0) {
    if (node.elseBody) run(node.elseBody, scope, out)
    return
  }
  for (const [key, element] of entries) {
    const frame = new Map<string, unknown>()
    if (decl.length === 1) frame.set(decl[0]!, element)
    if (decl.length === 2) {
      frame.set(decl[0]!, key)
      frame.set(decl[1]!, element)
    }
    run(node.body, { ...scope, dot: element, vars: [...scope.vars, frame] }, out)
  }
}

function evalPipeline(pipe: Pipeline, scope: Scope): unknown {
  let value: unknown = NONE
  for (const cmd of pipe.cmds) value = evalCommand(cmd, scope, value, pipe.where)
  if (pipe.op === ':=') {
    scope.vars[scope.vars.length - 1]!.set(pipe.decl[0]!, value)
  } else if (pipe.op === '=') {
    const frame = [...scope.vars].reverse().find((f) => f.has(pipe.decl[0]!))
    if (!frame) throw new TemplateError(`${pipe.where}: undefined variable ${pipe.decl[0]}`)
    frame.set(pipe.decl[0]!, value)
  }
  return value
}

function evalCommand(cmd: Operand[], scope: Scope, piped: unknown, where: string): unknown {
  const [first, ...rest] = cmd
  if (first?.k === 'ident') {
    const fn = FUNCTIONS[first.name]
    if (!fn) throw new TemplateError(`${where}: function "${first.name}" is not supported by the test renderer`)
    const args = rest.map((op) => evalOperand(op, scope, where))
    if (piped !== NONE) args.push(piped)
    return fn(args, scope, where)
  }
  if (first?.k === 'field' || first?.k === 'var') {
    // A method, as in Go: `.Files.Get "path"` calls Get with the arguments (and the piped value).
    const target = evalOperand(first, scope, where)
    if (typeof target === 'function') {
      const args = rest.map((op) => evalOperand(op, scope, where))
      if (piped !== NONE) args.push(piped)
      return (target as (...a: unknown[]) => unknown)(...args)
    }
    if (rest.length > 0 || piped !== NONE) throw new TemplateError(`${where}: can't give an argument to a non-function`)
    return target
  }
  if (rest.length > 0 || piped !== NONE) throw new TemplateError(`${where}: can't give an argument to a non-function`)
  return evalOperand(first!, scope, where)
}

function evalOperand(op: Operand, scope: Scope, where: string): unknown {
  switch (op.k) {
    case 'lit':
      return op.v
    case 'field':
      return walk(scope.dot, op.path, where)
    case 'var': {
      const frame = [...scope.vars].reverse().find((f) => f.has(op.name))
      if (!frame) throw new TemplateError(`${where}: undefined variable ${op.name}`)
      return walk(frame.get(op.name), op.path, where)
    }
    case 'sub':
      return evalPipeline(op.pipe, scope)
    case 'ident':
      // A function named without arguments in operand position, e.g. (include ...) is a sub.
      return evalCommand([op], scope, NONE, where)
  }
}

function walk(base: unknown, path: string[], where: string): unknown {
  let value = base
  for (const [i, segment] of path.entries()) {
    if (value === null || value === undefined) {
      throw new TemplateError(`${where}: nil pointer evaluating interface {}.${segment} (at .${path.slice(0, i + 1).join('.')})`)
    }
    if (!isMap(value)) throw new TemplateError(`${where}: can't evaluate field ${segment} in a ${typeof value}`)
    value = Object.hasOwn(value, segment) ? value[segment] : undefined
  }
  return value
}

// ---------------------------------------------------------------- functions

type Fn = (args: unknown[], scope: Scope, where: string) => unknown

const FUNCTIONS: Record<string, Fn> = {
  include: ([name, data], scope, where) => {
    const body = scope.defines.get(String(name))
    if (!body) throw new TemplateError(`${where}: no template "${String(name)}"`)
    return execute(body, data, scope.defines, scope.depth + 1)
  },
  default: ([fallback, ...given]) => (given.length === 0 || empty(given[0]) ? fallback : given[0]),
  quote: (args) => args.filter((a) => a !== null && a !== undefined).map((a) => JSON.stringify(str(a))).join(' '),
  nindent: ([n, s]) => `\n${indent(Number(n), str(s))}`,
  indent: ([n, s]) => indent(Number(n), str(s)),
  toYaml: ([v]) => stringify(v ?? null, { sortMapEntries: true, lineWidth: 0 }).replace(/\n$/, ''),
  sha256sum: ([s]) => createHash('sha256').update(str(s)).digest('hex'),
  b64enc: ([s]) => Buffer.from(str(s), 'utf8').toString('base64'),
  required: ([message, value]) => {
    if (value === null || value === undefined || value === '') throw new TemplateError(String(message))
    return value
  },
  fail: ([message]) => {
    throw new TemplateError(String(message))
  },
  trunc: ([n, s]) => {
    const text = str(s)
    const c = Number(n)
    if (c < 0) return text.length + c > 0 ? text.slice(text.length + c) : text
    return text.length > c ? text.slice(0, c) : text
  },
  trimSuffix: ([suffix, s]) => {
    const text = str(s)
    const end = str(suffix)
    return end && text.endsWith(end) ? text.slice(0, -end.length) : text
  },
  replace: ([from, to, s]) => str(s).split(str(from)).join(str(to)),
  contains: ([sub, s]) => str(s).includes(str(sub)),
  printf: ([format, ...args], _scope, where) => printf(str(format), args, where),
  int: ([v]) => toInt(v),
  // Sprig's add: every argument as int64, summed.
  add: (args) => args.reduce<number>((sum, v) => sum + toInt(v), 0),
  join: ([sep, list], _scope, where) => {
    if (list === null || list === undefined) return ''
    if (!Array.isArray(list)) throw new TemplateError(`${where}: join needs a list`)
    return list.map((v) => str(v)).join(str(sep))
  },
  deepCopy: ([v]) => structuredClone(v),
  // Sprig's set: changes the map in place and returns it.
  set: ([map, key, value], _scope, where) => {
    if (!isMap(map)) throw new TemplateError(`${where}: set needs a map`)
    map[str(key)] = value
    return map
  },
  // Sprig's unset: removes the key in place and returns the map.
  unset: ([map, key], _scope, where) => {
    if (!isMap(map)) throw new TemplateError(`${where}: unset needs a map`)
    delete map[str(key)]
    return map
  },
  and: (args) => args.find((a) => !truth(a)) ?? args[args.length - 1],
  or: (args) => args.find((a) => truth(a)) ?? args[args.length - 1],
  not: ([v]) => !truth(v),
  eq: ([a, ...rest]) => rest.some((b) => b === a),
  ne: ([a, b]) => a !== b,
  gt: ([a, b], _scope, where) => compare(a, b, where) > 0,
  lt: ([a, b], _scope, where) => compare(a, b, where) < 0,
}

function toInt(v: unknown): number {
  return typeof v === 'number' ? Math.trunc(v) : typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : 0
}

function compare(a: unknown, b: unknown, where: string): number {
  if (typeof a !== typeof b || (typeof a !== 'number' && typeof a !== 'string')) {
    throw new TemplateError(`${where}: incompatible types for comparison`)
  }
  return a < (b as typeof a) ? -1 : a > (b as typeof a) ? 1 : 0
}

function printf(format: string, args: unknown[], where: string): string {
  let n = 0
  return format.replace(/%([%sdvq])/g, (_m, verb: string) => {
    if (verb === '%') return '%'
    if (n >= args.length) throw new TemplateError(`${where}: printf: missing argument for %${verb}`)
    const arg = args[n++]
    if (verb === 'v') return print(arg)
    if (verb === 'q') return JSON.stringify(str(arg))
    if (verb === 's') return typeof arg === 'string' ? arg : `%!s(${goType(arg)}=${print(arg)})`
    return typeof arg === 'number' && Number.isInteger(arg) ? String(arg) : `%!d(${goType(arg)}=${print(arg)})`
  })
}

function goType(v: unknown): string {
  if (typeof v === 'number') return 'float64'
  if (typeof v === 'boolean') return 'bool'
  if (v === null || v === undefined) return '<nil>'
  return Array.isArray(v) ? '[]interface {}' : 'map[string]interface {}'
}

function indent(n: number, s: string): string {
  const pad = ' '.repeat(n)
  return pad + s.split('\n').join(`\n${pad}`)
}

/** Sprig's strval: how a value becomes a string for a function. */
function str(v: unknown): string {
  return typeof v === 'string' ? v : print(v)
}

/** How {{ value }} prints: Go's %v, with helm's "<no value>" → "". */
function print(v: unknown): string {
  if (v === null || v === undefined) return ''
  if (typeof v === 'string') return v
  if (typeof v === 'number') return goFloat(v)
  if (typeof v === 'boolean') return String(v)
  if (Array.isArray(v)) return `[${v.map(print).join(' ')}]`
  if (isMap(v)) return `map[${Object.keys(v).sort().map((k) => `${k}:${print(v[k])}`).join(' ')}]`
  return String(v)
}

// Go's %v of a float64 (helm reads numbers in values.yaml as float64): %g with the
// shortest precision, switching to an exponent at 1e+06 and below 1e-04.
function goFloat(n: number): string {
  if (n === 0 || !Number.isFinite(n)) return String(n)
  const exp = Math.floor(Math.log10(Math.abs(n)))
  if (exp < -4 || exp >= 6) {
    const [mantissa, e] = n.toExponential().split('e') as [string, string]
    const sign = e.startsWith('-') ? '-' : '+'
    return `${mantissa}e${sign}${e.replace(/^[-+]/, '').padStart(2, '0')}`
  }
  return String(n)
}

/** Go template truth: false, 0, nil, "" and empty collections are false. */
function truth(v: unknown): boolean {
  return !empty(v)
}

function empty(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === '') return true
  if (Array.isArray(v)) return v.length === 0
  if (isMap(v)) return Object.keys(v).length === 0
  return false
}

function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** Renders one template source with the given data (the renderer's own tests use it). */
export function renderString(src: string, data: unknown, helpers = ''): string {
  const defines = new Map<string, Node[]>()
  parseTemplate(helpers, '_helpers.tpl', defines)
  const nodes = parseTemplate(src, 'inline', defines)
  return execute(nodes, data, defines)
}
