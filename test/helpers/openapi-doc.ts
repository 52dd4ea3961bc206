// Reading an OpenAPI document and Fastify's route table in the tests that check one against the other.

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
