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
 *   deepCopy, set, unset, hasKey, and, or, not, eq, ne, gt, lt
 * - `.Values` (values.yaml deep-merged with overrides; null deletes a key values.yaml holds, as in helm),
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
 *
 * This file is the chart's part (values, templates/, manifests); the engine is in
 * go-template/: syntax.ts reads a template, execute.ts runs it with the functions, and
 * go-values.ts holds how Go and Sprig see a value.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import { Ajv, type ValidateFunction } from 'ajv'
import { parse, parseAllDocuments } from 'yaml'
import { TemplateError, parseTemplate, type Node } from './go-template/syntax.js'
import { execute } from './go-template/execute.js'
import { isMap } from './go-template/go-values.js'

export { TemplateError }

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

// ---------------------------------------------------------------- the chart

export function renderChart(chartDir: string, options: RenderOptions = {}): RenderedChart {
  const chartMeta = parsedYaml(join(chartDir, 'Chart.yaml')) as Record<string, unknown>
  const defaults = (parsedYaml(join(chartDir, 'values.yaml')) ?? {}) as Values
  const values = mergeValues(defaults, options.values ?? {})
  const schemaErrors = validateValues(chartDir, values)
  if (schemaErrors.length > 0) throw new TemplateError(`values don't meet the schema:\n${schemaErrors.join('\n')}`)

  const templatesDir = join(chartDir, 'templates')
  const paths = listFiles(templatesDir).sort()
  const defines = new Map<string, Node[]>()
  const parsed = new Map<string, Node[]>()
  for (const path of paths) {
    const rel = relative(templatesDir, path).split(sep).join('/')
    const template = parsedTemplate(path, rel)
    parsed.set(rel, template.nodes)
    for (const [name, body] of template.defines) defines.set(name, body)
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

/** A template file as parsed: its nodes, and the defines it holds. */
interface ParsedTemplate {
  nodes: Node[]
  defines: Map<string, Node[]>
}

// Each file of the chart parsed (a template, Chart.yaml, values.yaml), by path, kept while its
// text is the same: a chart test renders the chart many times with other values, and parsing
// the same files again was most of each render. What is kept is only read after: execute reads
// nodes and defines and changes neither, a template's parse does not depend on the defines of
// the files before it, and each render gets its own copy of the YAML (its templates may change it).
const parsedFiles = new Map<string, { src: string; value: unknown }>()

function parsedFile<T>(path: string, parseText: (src: string) => T): T {
  const src = readFileSync(path, 'utf8')
  let kept = parsedFiles.get(path)
  if (kept?.src !== src) {
    kept = { src, value: parseText(src) }
    parsedFiles.set(path, kept)
  }
  return kept.value as T
}

function parsedTemplate(path: string, rel: string): ParsedTemplate {
  return parsedFile(path, (src) => {
    const defines = new Map<string, Node[]>()
    return { nodes: parseTemplate(src, rel, defines), defines }
  })
}

function parsedYaml(path: string): unknown {
  return structuredClone(parsedFile(path, (src) => parse(src) as unknown))
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

/**
 * helm's values merge: maps merge deeply, anything else replaces, null removes the key the
 * base holds; a null where the base holds no such key stays, as helm keeps it (a value under
 * `config: {}` set to null reaches the templates, and `hasKey` sees it).
 */
export function mergeValues(base: Values, override: Values): Values {
  const out: Values = structuredClone(base)
  for (const [key, value] of Object.entries(override)) {
    if (value === null) {
      if (Object.hasOwn(out, key)) delete out[key]
      else out[key] = null
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

/** Renders one template source with the given data (the renderer's own tests use it). */
export function renderString(src: string, data: unknown, helpers = ''): string {
  const defines = new Map<string, Node[]>()
  parseTemplate(helpers, '_helpers.tpl', defines)
  const nodes = parseTemplate(src, 'inline', defines)
  return execute(nodes, data, defines)
}
