// Types of bench/lib/dashboard-trace.mjs, for the simulation that replays the family's asks.

/** A trace's shape in the dashboard family. */
export interface DashboardShape {
  users: number
  reports: number
  zipf: number
  ttlS: number
  latencyMs: number
  spread: number
  seed: number
  burst?: boolean
  measureS?: number
}
export const REPORTS_PER_DASHBOARD: number
export const THINK_MS: number
export const FAMILY_SEED: number
export function drawShapes(count: number): Array<DashboardShape & { burst: boolean }>
/** Per user, its loads: [start offset ms, the reports loaded together]. */
export function makeTrace(shape: DashboardShape, seconds: number): Array<Array<[number, number[]]>>
export function popularReports(trace: Array<Array<[number, number[]]>>, fromS: number, toS: number): { popular: Set<number>; reportsAsked: number; shareOfAsks: number; leastAsksPerS: number }
export function replaySeconds(shape: DashboardShape, quick: boolean): { warmupS: number; seconds: number }
