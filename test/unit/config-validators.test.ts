/**
 * The config's validators are generated from src/config/schema.ts and committed
 * (src/config/validators.generated.ts): the file must be what Ajv makes of the schema now.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { GENERATED, renderValidators } from '../../scripts/config-validators.mjs'
import * as schema from '../../src/config/schema.js'

describe('the generated config validators', () => {
  it('are Ajv\'s code for the schema as it stands (run `npm run generate:validators` after changing src/config/schema.ts)', () => {
    expect(readFileSync(GENERATED, 'utf8')).toBe(renderValidators(schema))
  })
})
