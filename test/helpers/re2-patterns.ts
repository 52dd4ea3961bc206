// The patterns of a JSON Schema or OpenAPI document that Go's regexp (RE2) would not read as
// JavaScript does. helm reads a chart's values.schema.json with it, as Go's OpenAPI libraries
// (kin-openapi, and the validating proxies built on it) read a document's: a look-ahead or a
// back-reference is refused there ('pattern must be a valid regex', helm/helm#9872) while
// ajv takes it. The check is of the syntax both read alike: no group but (?:…), no escape but
// of punctuation, \d, \s, \S, \w, \n.

const OUTSIDE_BOTH = /\(\?(?!:)|\\[^.\-/[\]()?*+{}|^$\\dsSwn]/

/** Every pattern of `doc` (`pattern` values, patternProperties' names), each after its path. */
export function schemaPatterns(doc: unknown): string[] {
  const patterns: string[] = []
  const walk = (node: unknown, path: string): void => {
    if (node === null || typeof node !== 'object') return
    for (const [key, value] of Object.entries(node)) {
      if (key === 'pattern' && typeof value === 'string') patterns.push(`${path}: ${value}`)
      if (key === 'patternProperties' && value !== null && typeof value === 'object') for (const name of Object.keys(value)) patterns.push(`${path}/patternProperties: ${name}`)
      walk(value, `${path}/${key}`)
    }
  }
  walk(doc, '')
  return patterns
}

/** The patterns of `doc` that RE2 refuses or reads otherwise, each after its path. */
export function patternsOutsideRe2(doc: unknown): string[] {
  return schemaPatterns(doc).filter((p) => OUTSIDE_BOTH.test(p.slice(p.indexOf(': ') + 2)))
}
