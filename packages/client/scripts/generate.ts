import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import openapiTS, { astToString, COMMENT_HEADER, type OpenAPI3 } from 'openapi-typescript'

// The client's types are generated from the gateway's caller document, docs/openapi.json
// (what GET /openapi.json serves; `npm run openapi` rewrites it from the routes). The
// generated file is committed; a test of the root suite renders it again in memory and
// fails while it differs (run `npm run generate -w @report-gateway/client`).

/** The caller OpenAPI document of the repository. */
export const DOCUMENT = new URL('../../../docs/openapi.json', import.meta.url)

/** The generated types, committed. */
export const SCHEMA = new URL('../src/schema.d.ts', import.meta.url)

/** schema.d.ts as openapi-typescript renders the document's text. */
export async function renderSchema(documentText: string): Promise<string> {
  const ast = await openapiTS(JSON.parse(documentText) as OpenAPI3, { silent: true })
  return `${COMMENT_HEADER}${astToString(ast)}`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(SCHEMA, await renderSchema(readFileSync(DOCUMENT, 'utf8')))
  process.stdout.write(`wrote ${fileURLToPath(SCHEMA)}\n`)
}
