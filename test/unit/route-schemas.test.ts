import { Ajv } from 'ajv'
import { describe, expect, it } from 'vitest'
import { validatedSchemas } from '../../src/http/schema-compilers.js'
import { closeAfterTest, composeGateway, testConfig } from '../helpers/build-gateway.js'

// The routes' request schemas are compiled without Ajv checking them against JSON Schema's
// meta-schema (`validateSchema: false`, src/http/server.ts): each process would compile the
// meta-schema's validator at its first start. They are the gateway's own, so they are
// checked here instead, once, as every listener builds them.

/** JSON Schema's meta-schema (draft-07, Ajv's default), with the union types the listeners allow. */
const meta = new Ajv({ allowUnionTypes: true, strict: false })

/** Why `schema` is not a JSON Schema, or null when it is one. */
function notASchema(schema: unknown): string | null {
  return meta.validateSchema(schema as object) ? null : meta.errorsText(meta.errors)
}

describe('the routes\' request schemas', () => {
  it('tells a schema that is not one (the check below can fail)', () => {
    expect(notASchema({ type: 'object', required: 'advertiserId' })).toMatch(/required must be array/)
    expect(notASchema({ type: 'object', properties: { advertiserId: { type: 'string', minLength: 1 } } })).toBeNull()
  })

  it('are each a JSON Schema, on both listeners', async () => {
    const gw = await composeGateway(testConfig({ PLATFORM_BASE_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN: 'route-schemas-platform-token-000000', ADMIN_TOKEN: 'route-schemas-admin-token-0000000000' }))
    try {
      await gw.proxy.ready()
      await gw.admin.ready()
      const schemas = validatedSchemas()
      // The report routes' queries, the admin routes' bodies, queries and params.
      expect(schemas.length).toBeGreaterThanOrEqual(5)
      expect(schemas.map(notASchema).filter((why) => why !== null)).toEqual([])
    } finally {
      await closeAfterTest(gw)
    }
  })
})
