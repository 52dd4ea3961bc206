// Reading an OpenAPI document and Fastify's route table in the tests that check one against the other.
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import SwaggerParser from '@apidevtools/swagger-parser'
import { Validator } from '@seriousme/openapi-schema-validator'
import { expect, it } from 'vitest'

export type Json = Record<string, unknown>

/** Fastify's route table as printRoutes shows it: full URL → methods. */
export function routeTable(text: string): Map<string, string[]> {
  const routes = new Map<string, string[]>()
  const stack: string[] = []
  for (const line of text.split('\n')) {
    const m = /^((?:│ {3}| {4})*)[├└]── (\S+)(?: \(([A-Z, ]+)\))?$/.exec(line)
    if (!m) continue
    stack.length = m[1]!.length / 4
    stack.push(m[2]!)
    if (m[3]) routes.set(stack.join(''), m[3].split(', '))
  }
  return routes
}

/** `node` of `doc`, following `$ref`s (`#/a/b`) of response and header objects. */
export function resolveRef(doc: Json, node: unknown): Json {
  let value = node as Json
  while (typeof value.$ref === 'string') {
    value = (value.$ref as string)
      .slice(2)
      .split('/')
      .reduce<Json>((at, part) => at[part.replace(/~1/g, '/').replace(/~0/g, '~')] as Json, doc)
  }
  return value
}

/** A JSON pointer (`#/a/b`) to `parts`, escaped. */
export const pointer = (...parts: string[]) => `#/${parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`

/**
 * What every OpenAPI document of the gateway is, as tests: OpenAPI 3.1 to two independent
 * validators, and the committed file, byte for byte, as `npm run openapi` renders it and
 * as its listener serves it (`served`, read once the tests run).
 */
export function itIsValidAndCommitted(committed: URL, render: () => Promise<string>, served: () => Json): void {
  it('validates as OpenAPI 3.1 with @seriousme/openapi-schema-validator and @apidevtools/swagger-parser', async () => {
    const doc = served()
    expect(doc.openapi).toBe('3.1.0')
    const validator = new Validator()
    const result = await validator.validate(doc as never)
    expect(result.errors).toBeUndefined()
    expect(result.valid).toBe(true)
    expect(validator.version).toBe('3.1')
    const api = (await SwaggerParser.validate(structuredClone(doc) as never)) as unknown as Json
    expect(api.openapi).toBe('3.1.0')
  })

  // OpenAPI 3.1, "Path Templating": each template of a path is a path parameter of the path
  // item or of each of its operations. The schema validators above do not check it;
  // generators and linters (Redocly's path-parameters-defined) do, and a generated call
  // without it cannot fill the path.
  it('names each template of a path as a path parameter of every operation of the path', () => {
    const doc = served() as { paths: Record<string, Json> }
    const missing: string[] = []
    for (const [path, item] of Object.entries(doc.paths)) {
      const templates = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!)
      const named = (parameters: unknown) => ((parameters as Json[] | undefined) ?? []).map((p) => resolveRef(doc, p)).filter((p) => p.in === 'path').map((p) => p.name)
      const shared = named(item.parameters)
      for (const [method, operation] of Object.entries(item)) {
        if (method === 'parameters' || typeof operation !== 'object' || operation === null) continue
        const own = [...shared, ...named((operation as Json).parameters)]
        for (const template of templates) if (!own.includes(template)) missing.push(`${method.toUpperCase()} ${path}: {${template}}`)
      }
    }
    expect(missing).toEqual([])
  })

  const file = fileURLToPath(committed).split('/').slice(-2).join('/')
  it(`is the committed ${file} (run \`npm run openapi\` after changing a route)`, async () => {
    const rendered = await render()
    expect(readFileSync(committed, 'utf8')).toBe(rendered)
    expect(JSON.parse(rendered)).toEqual(served())
  })
}

/** `METHOD path` of every operation the document describes. */
export function documentedOperations(doc: { paths: Record<string, object> }): Set<string> {
  return new Set(Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`)))
}
