import { describe, expect, it } from 'vitest'
import { metricValue, mostAsked, settledFrom, verdictLines } from '../../bench/lib/stats.mjs'

// The benchmark's verdicts (npm run bench): a figure read or judged wrongly would pass a
// gateway that misses its targets, or fail one that meets them.

describe('settledFrom: from where every value to the end is in the band', () => {
  const inBand = (x: number | null) => x !== null && x >= 10 && x <= 14
  it.each([
    ['in the band from the start', [12, 12, 13], 0],
    ['in the band from the third sample', [4, 20, 12, 11, 14], 2],
    ['out of it at the end', [12, 12, 15], null],
    ['in and out, then in for good', [12, 20, 12, 9, 12, 13], 4],
    ['a sample not measured breaks the run', [12, null, 12], 2],
    ['nothing measured', [null, null], null],
    ['no samples', [], null],
  ])('%s', (_what, values, want) => {
    expect(settledFrom(values, inBand)).toBe(want)
  })
})

describe('mostAsked: the most-asked keys that take a share of the asks', () => {
  it.each([
    ['one key takes half', [['a', 5], ['b', 3], ['c', 2]], 0.5, ['a'], 0.5],
    ['two keys needed to reach half', [['a', 4], ['b', 3], ['c', 3]], 0.5, ['a', 'b'], 0.7],
    ['order of the map does not matter', [['c', 2], ['a', 5], ['b', 3]], 0.5, ['a'], 0.5],
    ['the whole share', [['a', 1], ['b', 1]], 1, ['a', 'b'], 1],
    ['no asks', [], 0.5, [], 0],
  ] as const)('%s', (_what, entries, share, keys, covered) => {
    const got = mostAsked(new Map(entries as readonly (readonly [string, number])[]), share)
    expect(got.keys).toEqual(keys)
    expect(got.share).toBeCloseTo(covered)
  })
})

describe('metricValue: a series of a Prometheus text', () => {
  const text = [
    '# HELP gateway_platform_concurrency_limit the limit in force',
    'gateway_platform_concurrency_limit{credential="default"} 12',
    'gateway_platform_concurrency_limit{credential="other"} 30',
    'gateway_platform_in_flight_calls{credential="default"} 3',
  ].join('\n')
  it.each([
    ['the sample of one label set', 'gateway_platform_concurrency_limit', { credential: 'default' }, null, 12],
    ['the sum of every sample matching', 'gateway_platform_concurrency_limit', {}, null, 42],
    ['a series absent: the value given for it', 'gateway_platform_latency_floor_seconds', { credential: 'default' }, null, null],
    ['a series absent: 0 by default', 'gateway_platform_latency_floor_seconds', { credential: 'default' }, undefined, 0],
    ['a label set absent', 'gateway_platform_in_flight_calls', { credential: 'other' }, null, null],
  ])('%s', (_what, name, labels, absent, want) => {
    expect(absent === undefined ? metricValue(text, name, labels) : metricValue(text, name, labels, absent)).toBe(want)
  })
})

describe('verdictLines: a target as a line', () => {
  it.each([
    [{ name: 'p99', got: '12 ms', target: '≤ 20 ms', pass: true }, '- **PASS** p99: 12 ms (target ≤ 20 ms)'],
    [{ name: 'p99', got: '30 ms', target: '≤ 20 ms', pass: false }, '- **FAIL** p99: 30 ms (target ≤ 20 ms)'],
    [{ name: 'calls', got: 'nginx did not run', target: '≤ 1.2×', pass: null }, '- **NOT JUDGED** calls: nginx did not run (target ≤ 1.2×)'],
  ])('%o', (check, want) => {
    expect(verdictLines([check])).toEqual([want])
  })
})
