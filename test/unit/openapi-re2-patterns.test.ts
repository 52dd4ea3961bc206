// The API documents' patterns are read by Go's OpenAPI libraries too (kin-openapi, the
// validating proxies and client generators built on it), with RE2: a look-ahead there makes
// the whole document refused to load.
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { patternsOutsideRe2, schemaPatterns } from '../helpers/re2-patterns.js'

describe.each(['docs/openapi.json', 'docs/admin-openapi.json'])('%s', (file) => {
  it('holds only patterns RE2 reads as JavaScript does', () => {
    const doc = JSON.parse(readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')) as unknown
    expect(schemaPatterns(doc).length).toBeGreaterThan(0)
    expect(patternsOutsideRe2(doc)).toEqual([])
  })
})
