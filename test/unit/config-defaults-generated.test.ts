/**
 * config/default.yaml's parse is generated and committed (src/config/defaults.generated.ts):
 * a start reads the file and parses it only when its text is not the one generated from.
 */
import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import { describe, expect, it } from 'vitest'
import { DEFAULTS_YAML, GENERATED, renderDefaults } from '../../scripts/config-defaults.mjs'
import { readDefaultsObject } from '../../src/config/sources.js'

const text = readFileSync(DEFAULTS_YAML, 'utf8')

/** readDefaultsObject over `source`, counting the parses it asks for. */
function read(source: string): { value: Record<string, unknown>; parses: number; problems: string[] } {
  let parses = 0
  const problems: string[] = []
  const value = readDefaultsObject('/virtual/default.yaml', () => source, problems, 'config/default.yaml', (t) => {
    parses++
    return parse(t) as unknown
  })
  return { value, parses, problems }
}

describe('config/default.yaml, parsed ahead of time', () => {
  it('the generated parse is what the file parses to now (run `npm run generate:defaults` after changing config/default.yaml)', () => {
    expect(readFileSync(GENERATED, 'utf8')).toBe(renderDefaults(text))
  })

  it('the text generated from is taken without a parse, as a copy of its own', () => {
    const first = read(text)
    expect(first).toEqual({ value: parse(text), parses: 0, problems: [] })
    ;(first.value.server as Record<string, unknown>).changed = true
    expect(read(text).value).toEqual(parse(text))
  })

  it('any other text is parsed', () => {
    const other = `${text}\n# a line added\n`
    expect(read(other)).toEqual({ value: parse(other), parses: 1, problems: [] })
  })
})
