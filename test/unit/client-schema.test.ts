/**
 * The typed client's types are generated from docs/openapi.json and committed
 * (packages/client/src/schema.d.ts): the file must be what openapi-typescript makes of
 * the document now, and the client's codes those of the contract.
 */
import { readFileSync } from 'node:fs'
import { GATEWAY_ERROR_CODES } from '@report-gateway/client'
import { describe, expect, it } from 'vitest'
import { DOCUMENT, renderSchema, SCHEMA } from '../../packages/client/scripts/generate.js'

const CONTRACT = new URL('../../docs/contract.md', import.meta.url)
const version = (file: string) => (JSON.parse(readFileSync(new URL(file, import.meta.url), 'utf8')) as { version: string }).version

describe('the typed client package', () => {
  it('is versioned with the gateway: the version of the root package.json', () => {
    expect(version('../../packages/client/package.json')).toBe(version('../../package.json'))
  })

  it('has src/schema.d.ts generated from docs/openapi.json (run `npm run generate -w @report-gateway/client` after `npm run openapi`)', async () => {
    const rendered = await renderSchema(readFileSync(DOCUMENT, 'utf8'))
    expect(readFileSync(SCHEMA, 'utf8')).toBe(rendered)
  })

  it('knows every GW_* code of the contract\'s error table, and no other', () => {
    const text = readFileSync(CONTRACT, 'utf8')
    const table = text.slice(text.indexOf('\n## Errors\n'), text.indexOf('\n## Admin listener\n'))
    const codes = new Set([...table.matchAll(/^\| \d{3} \| `(GW_[A-Z_]+)` \|/gm)].map((m) => m[1]))
    expect(codes.size).toBeGreaterThan(10)
    expect([...GATEWAY_ERROR_CODES].sort()).toEqual([...codes].sort())
  })
})
