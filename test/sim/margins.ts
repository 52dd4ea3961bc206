import { quantile, type Verdict } from './checks.js'

/**
 * A sweep's margins (checks.ts `Verdict.margin`: 1 at a guarantee's bound, past 1 broken),
 * and what a change does to them. Whether a seed passes moves with any change of the
 * governor's timing, even one that changes no rule (docs/governor.md, "Judging a change"):
 * a change is judged by how the margins of every seed move, against how they move under a
 * change that should move nothing.
 */

/** A seed's margins by guarantee (the worst of the guarantee's verdicts; null: nothing judged). */
export type GuaranteeMargins = Record<string, number | null>
/** A sweep's margins by seed. */
export type SweepMargins = Record<string, GuaranteeMargins>

export function marginsOf(verdicts: Verdict[]): GuaranteeMargins {
  const out: GuaranteeMargins = {}
  for (const v of verdicts) {
    const before = out[v.guarantee]
    out[v.guarantee] = v.margin === null ? (before ?? null) : Math.max(before ?? -Infinity, v.margin)
  }
  return out
}

/** A sweep's margins as a file holds them: JSON, a margin past every bound (Infinity: a window with nothing done) as the string "Infinity" (JSON has no Infinity; null is "nothing judged"). */
export function marginsText(m: SweepMargins): string {
  return JSON.stringify(m, (_, v: unknown) => (v === Infinity ? 'Infinity' : v))
}

export function parseMargins(text: string): SweepMargins {
  return JSON.parse(text, (_, v: unknown) => (v === 'Infinity' ? Infinity : v)) as SweepMargins
}

/** A margin moved by less than this is the same (a sample's, a call's worth). */
export const SAME_WITHIN = 0.05

export interface GuaranteeSummary {
  guarantee: string
  judged: number
  broken: number
  p50: number
  p90: number
  p99: number
}

export interface GuaranteeChange {
  guarantee: string
  /** Seeds judged in both sweeps. */
  judged: number
  brokenBefore: number
  brokenAfter: number
  /** Seeds that crossed the bound, each way. */
  nowBroken: number
  nowKept: number
  /** Seeds whose margin rose, or fell, by more than SAME_WITHIN. */
  worse: number
  better: number
  /** The median of the seeds' changes (after less before). */
  medianChange: number
  /** How likely as many or more seeds on one side (worse or better) if each mover went either way as a coin falls (two-sided sign test). */
  signP: number
}

/** The two-sided sign test of `a` seeds one way against `b` the other: the chance of a split at least as uneven from a fair coin. */
export function signTest(a: number, b: number): number {
  const n = a + b
  if (n === 0) return 1
  const logC: number[] = [0]
  for (let k = 1; k <= n; k++) logC.push((logC[k - 1] as number) + Math.log((n - k + 1) / k))
  let tail = 0
  for (let k = 0; k <= Math.min(a, b); k++) tail += Math.exp((logC[k] as number) - n * Math.LN2)
  return Math.min(1, 2 * tail)
}

function judgedOf(margins: SweepMargins): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>()
  for (const [seed, of] of Object.entries(margins)) {
    for (const [guarantee, margin] of Object.entries(of)) {
      if (margin === null) continue
      const seeds = out.get(guarantee) ?? new Map<string, number>()
      seeds.set(seed, margin)
      out.set(guarantee, seeds)
    }
  }
  return out
}

/** Per guarantee: the seeds that judged it, those broken, and their margins' quantiles. */
export function summarize(margins: SweepMargins): GuaranteeSummary[] {
  return [...judgedOf(margins)].map(([guarantee, seeds]) => {
    const sorted = [...seeds.values()].sort((a, b) => a - b)
    return { guarantee, judged: sorted.length, broken: sorted.filter((m) => m > 1).length, p50: quantile(sorted, 0.5), p90: quantile(sorted, 0.9), p99: quantile(sorted, 0.99) }
  })
}

/** Per guarantee, seed by seed over the seeds both sweeps judged: how the margins moved from `before` to `after`. */
export function compare(before: SweepMargins, after: SweepMargins): GuaranteeChange[] {
  const was = judgedOf(before)
  return [...judgedOf(after)].map(([guarantee, seeds]) => {
    const prior = was.get(guarantee) ?? new Map<string, number>()
    const pairs = [...seeds].filter(([seed]) => prior.has(seed)).map(([seed, m]) => [prior.get(seed) as number, m] as const)
    const changes = pairs.map(([b, a]) => (a === b ? 0 : a - b)).sort((x, y) => x - y)
    return {
      guarantee,
      judged: pairs.length,
      brokenBefore: pairs.filter(([b]) => b > 1).length,
      brokenAfter: pairs.filter(([, a]) => a > 1).length,
      nowBroken: pairs.filter(([b, a]) => b <= 1 && a > 1).length,
      nowKept: pairs.filter(([b, a]) => b > 1 && a <= 1).length,
      worse: changes.filter((c) => c > SAME_WITHIN).length,
      better: changes.filter((c) => c < -SAME_WITHIN).length,
      medianChange: changes.length === 0 ? 0 : quantile(changes, 0.5),
      signP: signTest(changes.filter((c) => c > SAME_WITHIN).length, changes.filter((c) => c < -SAME_WITHIN).length),
    }
  })
}

const fixed = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : String(x))

/** The sweep's margins as a table, and, with `before`, how they moved from it. */
export function marginsReport(after: SweepMargins, before?: SweepMargins): string {
  const lines = ['| guarantee | seeds judged | broken | margin p50 | p90 | p99 |', '|---|---:|---:|---:|---:|---:|']
  for (const g of summarize(after)) lines.push(`| ${g.guarantee} | ${g.judged} | ${g.broken} | ${fixed(g.p50)} | ${fixed(g.p90)} | ${fixed(g.p99)} |`)
  if (before === undefined) return lines.join('\n')
  lines.push('', `| guarantee | seeds in both | broken before → after | newly broken | newly kept | worse by > ${SAME_WITHIN} | better by > ${SAME_WITHIN} | median change | sign test p |`, '|---|---:|---:|---:|---:|---:|---:|---:|---:|')
  for (const c of compare(before, after)) lines.push(`| ${c.guarantee} | ${c.judged} | ${c.brokenBefore} → ${c.brokenAfter} | ${c.nowBroken} | ${c.nowKept} | ${c.worse} | ${c.better} | ${fixed(c.medianChange)} | ${c.signP.toFixed(3)} |`)
  return lines.join('\n')
}
