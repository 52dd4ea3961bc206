// Types of bench/lib/stats.mjs, for the tests that pin it.

export interface Check {
  name: string
  got: string
  target: string
  pass: boolean | null
}
export const median: (xs: readonly number[]) => number
export const percentile: (sorted: readonly number[], q: number) => number
export const fmtInt: (n: number) => string
export const fmtMs: (ms: number | null | undefined) => string
export const fmtX: (x: number | null | undefined) => string
export const fmtPct: (x: number | null | undefined) => string
export function metricValue<A = number>(text: string, name: string, labels: Record<string, string>, absent?: A): number | A
export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string
export function latencyFigures(ms: readonly number[]): { p50: number; p95: number; p99: number; max: number }
export function verdictLines(checks: readonly Check[]): string[]
export function settledFrom<T>(values: readonly T[], ok: (value: T) => boolean): number | null
export function mostAsked<K>(asks: ReadonlyMap<K, number>, share: number): { keys: K[]; share: number }
