/**
 * The Go-template subset of render-chart.ts, run: a template's nodes executed over its
 * data (variables in frames, `.` rebound by with and range, maps ranged in sorted key
 * order as Go does), and the functions of Go templates and Sprig that the chart uses.
 */
import { createHash } from 'node:crypto'
import { stringify } from 'yaml'
import { TemplateError, type ControlNode, type Node, type Operand, type Pipeline } from './syntax.js'
import { compare, empty, goKind, indent, isMap, print, printf, str, toInt, truth } from './go-values.js'

interface Scope {
  dot: unknown
  vars: Map<string, unknown>[]
  defines: Map<string, Node[]>
  depth: number
}

const NONE = Symbol('no piped value')

export function execute(nodes: Node[], data: unknown, defines: Map<string, Node[]>, depth = 0): string {
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

/**
 * A regular expression as RE2 reads it, for the subset both engines read alike: literals,
 * classes, groups, alternation, anchors and repeats. Flags, look-arounds, named groups and
 * escapes other than of a punctuation mark are refused, so a pattern outside it fails the
 * test rather than matching otherwise than helm would.
 */
function sharedRegex(pattern: unknown, where: string): RegExp {
  const text = str(pattern)
  if (/\(\?|\\[^.\-/[\]()?*+{}|^$]/.test(text)) throw new TemplateError(`${where}: the regular expression ${JSON.stringify(text)} is outside what the test renderer reads as RE2 does`)
  return new RegExp(text)
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
  // Sprig's mul: every argument as int64, multiplied.
  mul: (args) => args.reduce<number>((product, v) => product * toInt(v), 1),
  // Sprig's div: the first argument as int64 divided by the second, truncated.
  div: ([a, b]) => Math.trunc(toInt(a) / toInt(b)),
  // Sprig's hasSuffix: the suffix first, then the string.
  hasSuffix: ([suffix, s]) => str(s).endsWith(str(suffix)),
  // Sprig's lower and trimPrefix (the prefix first, then the string).
  lower: ([s]) => str(s).toLowerCase(),
  trimPrefix: ([prefix, s]) => {
    const text = str(s)
    const start = str(prefix)
    return start && text.startsWith(start) ? text.slice(start.length) : text
  },
  // Sprig's regexMatch and regexFind (the pattern first): a pattern Go's RE2 and JavaScript read alike.
  regexMatch: ([pattern, s], _scope, where) => sharedRegex(pattern, where).test(str(s)),
  regexFind: ([pattern, s], _scope, where) => sharedRegex(pattern, where).exec(str(s))?.[0] ?? '',
  // Sprig's kindIs: the Go kind of the value; helm's numbers from values are float64.
  kindIs: ([kind, v]) => str(kind) === goKind(v),
  // Sprig's dict: keys and values in turn, a key as a string.
  dict: (args) => {
    const map: Record<string, unknown> = {}
    for (let i = 0; i < args.length; i += 2) map[str(args[i])] = args[i + 1] ?? null
    return map
  },
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
  // Sprig's hasKey: whether the map holds the key, whatever its value (null included).
  hasKey: ([map, key], _scope, where) => {
    if (!isMap(map)) throw new TemplateError(`${where}: hasKey needs a map`)
    return Object.hasOwn(map, str(key))
  },
  // Go's and/or: the first argument that decides, a missing value (null) included, else the last.
  and: (args) => deciding(args, false),
  or: (args) => deciding(args, true),
  not: ([v]) => !truth(v),
  eq: ([a, ...rest]) => rest.some((b) => b === a),
  ne: ([a, b]) => a !== b,
  gt: ([a, b], _scope, where) => compare(a, b, where) > 0,
  lt: ([a, b], _scope, where) => compare(a, b, where) < 0,
}

/** Go's and (`truthy` false) and or (true): the first argument whose truth is `truthy`, else the last. */
function deciding(args: unknown[], truthy: boolean): unknown {
  const at = args.findIndex((a) => truth(a) === truthy)
  return at < 0 ? args[args.length - 1] : args[at]
}
