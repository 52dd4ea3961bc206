// /readyz answers 200 with `ready` alone and 503 with the phase that keeps the replica from
// serving (`starting`, `stopping`; an invalid configuration stops the process before): each
// document declares each status's body as that, so that a generated client types a 200 as ready.
import { readFileSync } from 'node:fs'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { describe, expect, it } from 'vitest'
import type { Json } from '../helpers/openapi-doc.js'

const BODIES = { 'docs/openapi.json': {}, 'docs/admin-openapi.json': { platformToken: {}, redis: 'ok', degraded: [] } }

describe.each(Object.entries(BODIES))('%s', (file, detail) => {
  const doc = JSON.parse(readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')) as Json
  const ajv = new Ajv2020({ strict: false }).addSchema(doc, 'doc')
  const takes = (status: string, body: Json): boolean => ajv.validate({ $ref: `doc#/paths/~1readyz/get/responses/${status}/content/application~1json/schema` }, body)

  it("declares /readyz's 200 as ready alone, its 503 as starting or stopping", () => {
    expect(['ready', 'starting', 'stopping'].filter((status) => takes('200', { status, ...detail }))).toEqual(['ready'])
    expect(['ready', 'starting', 'stopping'].filter((status) => takes('503', { status, ...detail }))).toEqual(['starting', 'stopping'])
  })
})
