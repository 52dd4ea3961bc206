import { describe, expect, it } from 'vitest'
import { forcesRefresh } from '../../src/reports/forced-refresh.js'

// Which report reads force a fresh copy from the platform (reports/forced-refresh.ts): a
// team given `refresh: true` asking `no-cache` without a validator. fetch() adds `no-cache`
// (and `pragma: no-cache`) to every request carrying a validator in its default mode.

const MAY = { refresh: true }
const MAY_NOT = { refresh: false }

describe('a forced refresh', () => {
  it.each([
    { headers: { 'cache-control': 'no-cache' }, forces: true },
    { headers: { 'cache-control': 'No-Cache' }, forces: true },
    { headers: { 'cache-control': 'max-age=0, no-cache' }, forces: true },
    { headers: { pragma: 'no-cache' }, forces: true },
    { headers: { 'cache-control': 'no-cache', pragma: 'no-cache' }, forces: true },
    { headers: {}, forces: false },
    { headers: { 'cache-control': 'max-age=0' }, forces: false },
    { headers: { 'cache-control': 'no-cache="set-cookie"' }, forces: false },
    { headers: { 'cache-control': 'no-store' }, forces: false },
    // A validator revalidates the caller's copy: answered from the gateway's.
    { headers: { 'cache-control': 'no-cache', pragma: 'no-cache', 'if-none-match': '"a"' }, forces: false },
    { headers: { 'cache-control': 'no-cache', 'if-modified-since': 'Sun, 01 Feb 2026 00:00:00 GMT' }, forces: false },
    { headers: { pragma: 'no-cache', 'if-none-match': '*' }, forces: false },
  ])('is $forces for $headers from a team given refresh', ({ headers, forces }) => {
    expect(forcesRefresh(headers, MAY)).toBe(forces)
  })

  it('is never asked by a team without refresh, whatever it sends', () => {
    expect(forcesRefresh({ 'cache-control': 'no-cache', pragma: 'no-cache' }, MAY_NOT)).toBe(false)
  })
})
