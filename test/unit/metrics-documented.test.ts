/**
 * The metrics the operations guide lists (docs/operations/monitoring.md, "Metrics") are
 * the ones /metrics serves, both ways and with their labels: a series added, renamed or
 * given a label in src/observe/metrics.ts without the guide, or a series the guide names
 * that no longer exists, fails here. Every gateway_* name the contract mentions exists.
 * The process metrics are one entry, `gateway_process_`, in the guide.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { createMetrics } from '../../src/observe/metrics.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const read = (path: string) => readFileSync(`${ROOT}${path}`, 'utf8')
const PROCESS_PREFIX = 'gateway_process_'

/** Every gateway series served: its name and its labels (sorted, comma-joined). */
function served(): Map<string, string> {
  const names = new Map<string, string>()
  for (const metric of createMetrics().registry.getMetricsAsArray()) {
    const m = metric as unknown as { name: string; labelNames?: string[] }
    names.set(m.name, [...(m.labelNames ?? [])].sort().join(','))
  }
  return names
}

/**
 * The guide's Metrics section: each series it names, with the labels it writes for it
 * (`gateway_name{labels}`; every spelling with labels must agree). A name written without
 * labels is a series without any, unless the section writes its labels elsewhere (a
 * paragraph naming it again).
 */
function documented(): Map<string, string> {
  const guide = read('docs/operations/monitoring.md')
  const section = guide.slice(guide.indexOf('## Metrics'), guide.indexOf('\n## ', guide.indexOf('## Metrics') + 1))
  const spellings = new Map<string, Set<string>>()
  for (const [, name, labels] of section.matchAll(/`(gateway_[a-z0-9_]+)(?:\{([^}]*)\})?`/g)) {
    const set = spellings.get(name!) ?? new Set<string>()
    set.add(labels === undefined ? '' : `{${labels.split(',').map((l) => l.trim()).filter(Boolean).sort().join(',')}}`)
    spellings.set(name!, set)
  }
  const names = new Map<string, string>()
  for (const [name, set] of spellings) {
    const labelled = [...set].filter((s) => s !== '')
    names.set(name, labelled.length === 0 ? '' : labelled.length === 1 ? labelled[0]!.slice(1, -1) : `labels written ${labelled.join(' and ')}`)
  }
  return names
}

describe('the metrics the operations guide lists', () => {
  const serves = served()
  const guide = documented()
  const own = [...serves.keys()].filter((name) => !name.startsWith(PROCESS_PREFIX))

  it('lists every series /metrics serves, with its labels', () => {
    expect(own.filter((name) => !guide.has(name)), 'served, not in the guide').toEqual([])
    expect(own.filter((name) => guide.has(name) && guide.get(name) !== serves.get(name)).map((name) => `${name}: guide {${guide.get(name)}}, served {${serves.get(name)}}`)).toEqual([])
  })

  it('names no series /metrics does not serve', () => {
    expect([...guide.keys()].filter((name) => name !== PROCESS_PREFIX && !serves.has(name))).toEqual([])
    expect([...serves.keys()].some((name) => name.startsWith(PROCESS_PREFIX))).toBe(true)
  })

  it('the contract names only series /metrics serves', () => {
    const contract = read('docs/contract.md')
    const names = new Set([...contract.matchAll(/\bgateway_[a-z0-9_]+/g)].map(([name]) => name).filter((name) => !name.startsWith(PROCESS_PREFIX)))
    expect(names.size).toBeGreaterThan(10)
    expect([...names].filter((name) => !serves.has(name) && !serves.has(name.replace(/_(bucket|sum|count)$/, '')))).toEqual([])
  })
})
