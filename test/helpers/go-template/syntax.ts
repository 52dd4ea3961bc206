/**
 * The Go-template subset of render-chart.ts, read: the lexer (text and `{{ }}` actions,
 * trim markers, comments), the tokenizer of an action, and the parser into nodes (actions,
 * if / with / range with their else, define). Anything outside the subset is a
 * TemplateError naming where it stands.
 */

export class TemplateError extends Error {
  override name = 'TemplateError'
}

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

export type Operand =
  | { k: 'lit'; v: unknown }
  | { k: 'field'; path: string[] }
  | { k: 'var'; name: string; path: string[] }
  | { k: 'ident'; name: string }
  | { k: 'sub'; pipe: Pipeline }

export interface Pipeline {
  decl: string[]
  op: ':=' | '=' | null
  cmds: Operand[][]
  where: string
}

export type Node =
  | { t: 'text'; text: string }
  | { t: 'action'; pipe: Pipeline }
  | ControlNode

export interface ControlNode {
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

export function parseTemplate(src: string, file: string, defines: Map<string, Node[]>): Node[] {
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
