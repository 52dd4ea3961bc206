import { allowOf } from '../methods.js'
import { operationName } from './platform-paths.js'

// HEAD and OPTIONS under /api/v1/ as operations of the proxy listener's document, so that a
// validating proxy (Prism) routes them and holds their answers, and a generated client
// types them: HEAD of every GET, the GET's answers without a body (Fastify answers HEAD of
// a GET route as its GET, the body left out; a platform path's HEAD is forwarded); OPTIONS
// of every path, 204 with the `allow` the gateway answers it with (methods.ts), before the
// key is read.

type Json = Record<string, unknown>

/** Adds `head` to each path under /api/v1/ with a `get`, and `options` to each; `responses`: the document's components.responses. */
export function headAndOptions(paths: Record<string, Record<string, Json>>, responses: Record<string, Json>, requestId: Json): void {
  for (const [path, item] of Object.entries(paths)) {
    if (!path.startsWith('/api/v1/')) continue
    if (item.get && !item.head) item.head = headOf(item.get, responses)
    item.options = optionsOperation(allowOf(path), requestId, `options${operationName(path)}`, pathParameters(item))
  }
}

/**
 * OPTIONS of a path whose methods are `allow`: 204, answered by the gateway, no key needed;
 * `parameters`: the path's templates, which every operation of a templated path names (OpenAPI 3.1, "Path Templating").
 */
export function optionsOperation(allow: string, requestId: Json, operationId?: string, parameters: Json[] = []): Json {
  return {
    tags: ['methods'],
    ...(operationId ? { operationId } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    summary: 'The methods this path takes',
    description: 'Answered by the gateway before a key is read (none is needed), never forwarded: `204` with `allow`.',
    security: [],
    responses: {
      '204': {
        description: 'No body; `allow` names the methods of this path.',
        headers: { allow: { description: 'The methods this path takes (RFC 9110, 10.2.1).', required: true, schema: { const: allow } }, 'x-request-id': requestId },
      },
    },
  }
}

/** The path parameters the operations of a path item name, each once. */
function pathParameters(item: Record<string, Json>): Json[] {
  const byName = new Map<string, Json>()
  for (const operation of Object.values(item)) {
    for (const parameter of (operation.parameters as Json[] | undefined) ?? []) {
      if (parameter.in === 'path' && !byName.has(parameter.name as string)) byName.set(parameter.name as string, parameter)
    }
  }
  return [...byName.values()]
}

/** The HEAD of a GET operation: its parameters and answers, no body in any answer. */
function headOf(get: Json, responses: Record<string, Json>): Json {
  const head = structuredClone(get)
  const id = get.operationId as string | undefined
  if (id) head.operationId = id.startsWith('get') ? `head${id.slice(3)}` : `head${id[0]?.toUpperCase()}${id.slice(1)}`
  head.summary = `${get.summary as string} (HEAD: its headers only)`
  const answers: Record<string, Json> = {}
  for (const [status, answer] of Object.entries(get.responses as Record<string, Json>)) {
    const named = typeof answer.$ref === 'string' ? responses[answer.$ref.slice(answer.$ref.lastIndexOf('/') + 1)] : answer
    const { content: _body, ...rest } = structuredClone(named ?? answer)
    answers[status] = rest
  }
  head.responses = answers
  return head
}
