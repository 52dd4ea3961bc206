// Reading an OpenAPI document and Fastify's route table in the tests that check one against the other.
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import SwaggerParser from '@apidevtools/swagger-parser'
import { Validator } from '@seriousme/openapi-schema-validator'
import type { Ajv2020 } from 'ajv/dist/2020.js'
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

/** A real answer, as checked against the document. */
export interface Answer {
  status: number
  headers: Headers
  body: string
}

/** Checks one answer against the document's operation; returns what does not match. */
export function mismatches(doc: Json, ajv: Ajv2020, path: string, method: string, answer: Answer): string[] {
  const op = (doc.paths as Record<string, Record<string, Json>>)[path]?.[method]
  if (!op) return [`${method.toUpperCase()} ${path} is not in the document`]
  const responses = op.responses as Record<string, unknown>
  const status = String(answer.status)
  const key = [status, `${status[0]}XX`, 'default'].find((k) => k in responses)
  if (!key) return [`${answer.status} is not a documented answer of ${method.toUpperCase()} ${path}`]
  const response = resolveRef(doc, responses[key])
  const problems: string[] = []
  const declared = (response.headers ?? {}) as Record<string, unknown>
  for (const [name, h] of Object.entries(declared)) {
    const value = answer.headers.get(name)
    if (value === null) {
      if (resolveRef(doc, h).required === true) problems.push(`header ${name} is required for ${key} but not sent`)
      continue
    }
    const schema = resolveRef(doc, h).schema as Json
    const typed = schema.type === 'integer' ? Number(value) : value
    if (!ajv.validate(schema, typed)) problems.push(`header ${name}: ${value}: ${ajv.errorsText()}`)
  }
  // The headers the gateway itself sends (a passed-on answer's own, the platform's, aside).
  for (const name of ['x-request-id', 'ratelimit', 'ratelimit-policy', 'x-cache', 'cache-status', 'vary', 'cache-control', 'age', 'etag', 'retry-after', 'www-authenticate', 'platform-usage', 'report-settled-through', 'report-provisional-days', 'x-content-type-options', 'content-security-policy']) {
    if (answer.headers.get(name) !== null && !(name in declared)) problems.push(`header ${name} is sent but not declared for ${key}`)
  }
  const content = response.content as Record<string, Json> | undefined
  const type = (answer.headers.get('content-type') ?? '').split(';')[0]!.trim()
  // A HEAD answer is a GET's headers without its body; a body sent is one the document
  // declares (a validating client refuses one where it declares none).
  if (method === 'head') return problems
  if (!content) return answer.body === '' ? problems : [...problems, `a body (${type}) is sent but no content is declared for ${key}`]
  if (!(type in content)) return [...problems, `content type ${type} is not declared for ${key}`]
  const schemaAt = typeof responses[key] === 'object' && '$ref' in (responses[key] as Json) ? `${(responses[key] as Json).$ref as string}/content/${type.replace('/', '~1')}/schema` : pointer('paths', path, method, 'responses', key, 'content', type, 'schema')
  if (!ajv.validate({ $ref: `openapi.json${schemaAt}` }, JSON.parse(answer.body))) problems.push(`body ${answer.body.slice(0, 200)}: ${ajv.errorsText()}`)
  return problems
}
