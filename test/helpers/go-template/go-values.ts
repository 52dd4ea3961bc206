/**
 * Values as Go templates and Sprig see them: truth, emptiness, how a value prints (Go's
 * %v of helm's float64 numbers), printf's verbs, comparison and Sprig's int.
 */
import { TemplateError } from './syntax.js'

export function toInt(v: unknown): number {
  return typeof v === 'number' ? Math.trunc(v) : typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : 0
}

export function compare(a: unknown, b: unknown, where: string): number {
  if (typeof a !== typeof b || (typeof a !== 'number' && typeof a !== 'string')) {
    throw new TemplateError(`${where}: incompatible types for comparison`)
  }
  return a < (b as typeof a) ? -1 : a > (b as typeof a) ? 1 : 0
}

export function printf(format: string, args: unknown[], where: string): string {
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

/** Sprig's kindOf of a value read from helm's values (their numbers are float64; `int`'s int64 is not told apart). */
export function goKind(v: unknown): string {
  if (typeof v === 'string') return 'string'
  if (typeof v === 'number') return 'float64'
  if (typeof v === 'boolean') return 'bool'
  if (v === null || v === undefined) return 'invalid'
  return Array.isArray(v) ? 'slice' : 'map'
}

export function indent(n: number, s: string): string {
  const pad = ' '.repeat(n)
  return pad + s.split('\n').join(`\n${pad}`)
}

/** Sprig's strval: how a value becomes a string for a function. */
export function str(v: unknown): string {
  return typeof v === 'string' ? v : print(v)
}

/** How {{ value }} prints: Go's %v, with helm's "<no value>" → "". */
export function print(v: unknown): string {
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
export function truth(v: unknown): boolean {
  return !empty(v)
}

export function empty(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === '') return true
  if (Array.isArray(v)) return v.length === 0
  if (isMap(v)) return Object.keys(v).length === 0
  return false
}

export function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}
