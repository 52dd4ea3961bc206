import { AjvCompiler } from '@fastify/ajv-compiler'
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import type { FastifyServerOptions } from 'fastify'

// The route schemas' validators and serializers, compiled once a process. Fastify compiles
// every route's schemas for each instance it builds, about 100 ms of CPU a listener pair:
// a process that builds gateways again and again (a test worker: tens of gateways, two
// listeners each) spent half of each start there. The same schema (the same JSON) compiles
// to the same function, so each is compiled at its first route and taken from here after.

/** What Fastify hands a compiler for one schema of one route. */
interface RouteSchema {
  schema?: unknown
  method?: string
  url?: string
  httpPart?: string
}
type Compile = (route: RouteSchema) => unknown
type Builder = (externalSchemas: unknown, options?: { customOptions?: unknown }) => Compile

// Fastify's own builders (their types name a call shape Fastify does not make): one Ajv
// for each set of external schemas and options.
const ajvPool = AjvCompiler() as unknown as Builder
const serializerPool = SerializerSelector() as unknown as Builder

/** `build`'s compiler, each schema compiled once a process: known by its JSON and what the compiler was built with. */
function once(build: Builder, check: (route: RouteSchema) => void = () => undefined): Builder {
  const compiled = new Map<string, unknown>()
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, options)
    const settings = JSON.stringify([externalSchemas, options])
    return (route) => {
      check(route)
      const key = `${settings}\n${JSON.stringify(route.schema)}`
      if (!compiled.has(key)) compiled.set(key, compile(route))
      return compiled.get(key)
    }
  }
}

// The request schemas validated in this process: Ajv does not check them against JSON
// Schema's meta-schema as it compiles them (`validateSchema: false`, http/server.ts), a test does.
// Each once, by its JSON: the gateways a test worker builds give each route its own objects.
const validated = new Map<string, unknown>()

/** The request schemas (body, querystring, params) the routes built in this process validate with. */
export function validatedSchemas(): unknown[] {
  return [...validated.values()]
}

/**
 * Fastify does not lower the property names of a `headers` schema it hands a builder of the
 * application's: no route validates its headers through a schema (the admin routes take
 * none, /api/v1's schemas only describe), and one that does is refused at its start rather
 * than matched against names as written.
 */
function noHeaders(route: RouteSchema): void {
  if (route.httpPart === 'headers') throw new Error(`${route.method} ${route.url}: a headers schema is not validated (schema-compilers.ts); check the headers in the handler`)
}

/** The `schemaController` of every listener's Fastify. */
export const SCHEMA_CONTROLLER = {
  compilersFactory: {
    buildValidator: once(ajvPool, (route) => {
      noHeaders(route)
      validated.set(JSON.stringify(route.schema), route.schema)
    }),
    buildSerializer: once(serializerPool),
  },
} as unknown as NonNullable<FastifyServerOptions['schemaController']>
