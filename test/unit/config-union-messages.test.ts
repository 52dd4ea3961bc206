import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import { describe, expect, it } from 'vitest'
import { DEFAULT_CONFIG_PATH } from '../../src/config.js'
import { configProblems as problems } from '../helpers/load-config.js'

// Contract, "When the start stops": each problem is `<key or variable>: <what is wrong and
// what to do>`. A setting that takes one of several kinds (a path or null, true/false or a
// fraction, a list of nodes or null) names those kinds; Ajv's own words for a union ("must
// match a schema in anyOf") say neither.

/** Every setting of config/default.yaml but the teams, as its path. */
function settings(): string[][] {
  const out: string[][] = []
  const walk = (node: Record<string, unknown>, at: string[]) => {
    for (const [key, value] of Object.entries(node)) {
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) walk(value as Record<string, unknown>, [...at, key])
      else if (!(at.length === 0 && key === 'teams')) out.push([...at, key])
    }
  }
  walk(parse(readFileSync(DEFAULT_CONFIG_PATH, 'utf8')) as Record<string, unknown>, [])
  return out
}

const nested = (path: string[], value: string) => path.reduceRight((inner, key) => `{${key}: ${inner}}`, value)
const WRONG = ['"maybe"', '{x: 1}', '-5', 'true', '[1]']
const TEAM = (fields: string) => `teams:\n  growth:\n    keys: []\n    advertisers: [101]\n    ${fields}\n`

describe('a setting of several kinds says which kinds it takes', () => {
  it('never answers with Ajv\'s words for a union, whatever a setting is given', () => {
    const raw: string[] = []
    for (const path of settings()) {
      for (const value of WRONG) {
        let lines: string[]
        try {
          lines = problems(nested(path, value))
        } catch {
          continue
        }
        raw.push(...lines.filter((line) => /anyOf|must match a schema/.test(line)))
      }
    }
    for (const fields of ['rateLimit: 5', 'credential: 5', 'maxConcurrent: "x"', 'queue: "x"', 'platformSecondsPerDay: "x"', 'webhook: 5']) raw.push(...problems(TEAM(fields)).filter((line) => /anyOf|must match a schema/.test(line)))
    expect(raw).toEqual([])
  })

  it('names each kind: a path or null, true/false or a fraction, a list of nodes or null, one of two words', () => {
    expect(problems('admin: { tokensFile: 5 }')).toEqual(['admin.tokensFile: must be a non-empty string or null (got 5)'])
    expect(problems('cache: { refreshAhead: maybe }')).toEqual(['cache.refreshAhead: must be true or false or a number from 0, below 1 (got "maybe")'])
    expect(problems('redis: { cluster: true }')).toEqual(['redis.cluster: must be a list of mappings of the settings (host, port) (at least 1) or null (got true)'])
    expect(problems('platform: { probe: { method: PUT, path: /api/v1/x } }')).toEqual(['platform.probe.method: must be "GET" or "POST" (got "PUT")'])
  })
})
