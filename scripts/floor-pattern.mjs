// A duration or size at least a floor, as the chart's values.schema.json checks it (helm reads
// it with Go's RE2: plain groups and alternatives only). The gateway reads a whole number,
// leading zeros allowed, and its unit (src/config/units.ts).

/** Whole numbers of digits from `n` up (n >= 1), without leading zeros: longer ones, or as long and no smaller. */
export function wholeAtLeast(n) {
  const digits = String(n)
  const k = digits.length
  const alternatives = [`[1-9]\\d{${k},}`, digits]
  for (let i = 0; i < k; i++) {
    const d = Number(digits[i])
    if (d === 9) continue
    const tail = k - i - 1
    alternatives.push(`${digits.slice(0, i)}[${d + 1}-9]${tail > 0 ? `\\d{${tail}}` : ''}`)
  }
  return alternatives.join('|')
}

/** A whole number of one of `units` (name: its size in the least unit) of at least `least` least units, written as text. */
export function atLeastPattern(least, units) {
  const parts = Object.entries(units).map(([unit, factor]) => `(${wholeAtLeast(Math.max(1, Math.ceil(least / factor)))})${unit}`)
  return `^0*(${parts.join('|')})$`
}
