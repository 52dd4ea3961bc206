/**
 * The chaos soak's verdict (scripts/soak.mjs): each fault with its errors and recovery, the
 * targets met or missed, and the replicas' warn and error lines.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { BASELINE_FROM_S, CALM_AFTER_S, SEAT_LEASE_S, RECOVERY_TARGET_S, RECOVERY_WINDOW_S, RSS_AFTER_S, RSS_GROWTH, SEED } from './soak-options.mjs'
import { mb, secs } from './soak-measure.mjs'
import { tmp } from './soak-processes.mjs'
import { baselineShare, commonestErrors, recoveryAfter, rssWithin, secondsAfter } from './soak-targets.mjs'

/** Prints the chaos run's faults and targets; returns the targets missed, each with its first examples (none: every one met). */
export function chaosVerdict({ ledger, loadEndS, replicas, unexpectedExits, sigtermExits }) {
  const windows = ledger.windows
  const faults = windows.slice(1)
  const calm = [[BASELINE_FROM_S, faults[0]?.startS ?? loadEndS]]
  faults.forEach((w, k) => calm.push([w.endS + CALM_AFTER_S, faults[k + 1]?.startS ?? loadEndS]))
  const baseline = baselineShare(ledger.answers, calm.filter(([from, to]) => to > from))
  const pct = (x) => `${(x * 100).toFixed(2)} %`
  for (const [k, w] of faults.entries()) {
    w.recoveredS = recoveryAfter(ledger.answers, w.endS, faults[k + 1]?.startS ?? loadEndS, baseline.upper, RECOVERY_WINDOW_S)
  }
  const count = (list) => list?.length ?? 0
  console.log('')
  console.log(`## Faults (seed ${SEED}; baseline error rate ${pct(baseline.share)}, judged at most ${pct(baseline.upper)}: ${baseline.errors} errors in ${baseline.n} answers of the calm stretches)`)
  console.log('')
  console.log('| # | at | fault | lasted | answers | errors (in a platform pause; answered after the next fault began) | back to baseline | wrong bodies | undocumented | cached copy refused | Redis = replicas | hot x-cache |')
  console.log('|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|')
  for (const w of windows) {
    const fault = w.n === 0 ? '(before the first fault)' : w.name + (w.failed ? ' (FAILED to run)' : '')
    const recovered = w.n === 0 ? '' : `${w.recoveredS} s${w.recoveredS > RECOVERY_TARGET_S ? ' MISSED' : ''}`
    const agreed = w.n === 0 ? '' : w.disagreement ? `MISSED: ${w.disagreement}` : `after ${w.agreedAfterS?.toFixed(1)} s`
    const xc = Object.entries(w.xCache ?? {}).sort().map(([k, c]) => `${k} ${c}`).join(', ')
    console.log(
      `| ${w.n} | ${w.n === 0 ? '0 s' : secs(w.startS)} | ${fault} | ${w.n === 0 ? '' : secs(w.endS - w.startS)} | ${w.answers ?? 0} | ${w.errors ?? 0} (${w.paused ?? 0}; ${w.overtaken ?? 0}) | ${recovered} | ${count(w.wrong)} | ${count(w.undocumented)} | ${count(w.refused)} | ${agreed} | ${xc} |`,
    )
  }
  for (const w of faults) {
    console.log(`  fault ${w.n}: ${w.detail}`)
    if (w.recoveredS === 0) continue
    // What the errors after the end were, second by second, and what they said: what an
    // operator would look into. A slow recovery keeps it for the end of the output too.
    const seconds = secondsAfter(ledger.answers, w.endS, w.endS + w.recoveredS)
    const codes = {}
    for (const b of seconds) for (const [what, c] of Object.entries(b.codes)) codes[what] = (codes[what] ?? 0) + c
    w.aftermath = [
      `#${w.n}: errors in the ${w.recoveredS} s after its end, by second: ${seconds.map((b) => `${b.errors}/${b.n}`).join(' ')}; ${Object.entries(codes).sort((a, b) => b[1] - a[1]).map(([k, c]) => `${k} ${c}`).join(', ')}`,
      ...commonestErrors(ledger.answers, w.endS, w.endS + w.recoveredS, 3).map((line) => `#${w.n} said: ${line}`),
      ...(w.recoveredS > RECOVERY_TARGET_S ? (w.governors ?? []).map((line) => `#${w.n} governors ${line}`) : []),
    ]
    for (const line of w.aftermath) console.log(`    ${line}`)
  }

  const sum = (key) => windows.reduce((n, w) => n + count(w[key]), 0)
  const firstOf = (key) => windows.flatMap((w) => w[key] ?? []).slice(0, 5)
  const slow = faults.filter((w) => w.recoveredS > RECOVERY_TARGET_S)
  const apart = faults.filter((w) => w.disagreement)
  const rss = replicas.map((gw) => {
    const m = gw.proc.memory
    // After the first minute of the run, and 20 s into the life of a replica started again.
    const first = m.find((x) => x.at >= RSS_AFTER_S && x.age >= 20)
    const last = m[m.length - 1]
    if (!first || !last || first === last) return { name: gw.name, ok: true, text: `${gw.name} n/a (no sample after its first minute)` }
    return {
      name: gw.name,
      ok: rssWithin(first, last, RSS_GROWTH),
      text: `${gw.name} RSS ${mb(first.rss)} -> ${mb(last.rss)} MB (V8 new space ${mb(first.newSpace ?? 0)} -> ${mb(last.newSpace ?? 0)} MB, V8 heap reserved ${mb(first.heapTotal ?? 0)} -> ${mb(last.heapTotal ?? 0)} MB)`,
    }
  })
  const targets = [
    [sum('wrong') === 0, `0 wrong bodies: ${sum('wrong')}`, firstOf('wrong')],
    [sum('undocumented') === 0, `0 answers outside the documented statuses and codes: ${sum('undocumented')}`, firstOf('undocumented')],
    [
      slow.length === 0,
      `errors back to the baseline rate within ${RECOVERY_TARGET_S} s of each fault's end: ${slow.length} of ${faults.length} missed${slow.length ? ` (${slow.map((w) => `#${w.n} ${w.name}: ${w.recoveredS} s`).join('; ')})` : ''}`,
      slow.flatMap((w) => w.aftermath),
    ],
    [sum('refused') === 0, `reports answered 200 before answered from the cache during and after each fault: ${sum('refused')} refused`, firstOf('refused')],
    [
      apart.length === 0,
      `Redis's seats and learned limit equal to the replicas' within ${SEAT_LEASE_S} s of each fault's end: ${apart.length} of ${faults.length} missed${apart.length ? ` (${apart.map((w) => `#${w.n}: ${w.disagreement}`).join('; ')})` : ''}`,
      [],
    ],
    [unexpectedExits.length === 0 && sigtermExits.every((e) => e.endsWith(': 0')), `no replica exited untold: ${unexpectedExits.length}; SIGTERM exits: ${sigtermExits.join(', ') || 'none during the run'}`, unexpectedExits],
    [rss.every((r) => r.ok), `RSS, less what V8's new space grew, after the last fault within ${RSS_GROWTH * 100} % of after the first minute: ${rss.map((r) => r.text).join(', ')}`, []],
  ]
  console.log('')
  console.log(`## Targets (${faults.length} faults, ${windows.reduce((n, w) => n + (w.answers ?? 0), 0)} answers)`)
  for (const [ok, text, examples] of targets) {
    console.log(`${ok ? 'met   ' : 'MISSED'} ${text}`)
    for (const e of examples) console.log(`         ${e}`)
  }
  // Each missed target with its first examples.
  return targets.filter(([ok]) => !ok).map(([, text, examples]) => [text, ...examples.map((e) => `    ${e}`)].join('\n'))
}

/** The replicas' warn and error lines, by message: what an operator paged at night would read. */
export function logSummary(replicas) {
  console.log('')
  console.log('## Log lines at warn and above (all instances of each replica)')
  for (const gw of replicas) {
    const counts = new Map()
    let text = ''
    try {
      text = readFileSync(join(tmp, `${gw.name}.log`), 'utf8')
    } catch {
      // no log
    }
    let total = 0
    for (const line of text.split('\n')) {
      if (!line.startsWith('{')) continue
      let entry
      try {
        entry = JSON.parse(line)
      } catch {
        continue
      }
      if (!(entry.level >= 40)) continue
      total += 1
      // Counts in a message (a flood's summary line) are one kind of line.
      const key = `${entry.level >= 50 ? 'error' : 'warn '} ${String(entry.msg).replace(/\d+/g, 'N')}${entry.code && !String(entry.msg).includes(entry.code) ? ` [${entry.code}]` : ''}${entry.err?.stack ? ' (with a stack)' : ''}`
      counts.set(key, (counts.get(key) ?? 0) + 1)
    }
    console.log(`  ${gw.name}: ${total} lines`)
    // Error lines first, then the most frequent: a rare error is not cut by the twelve shown.
    const errorFirst = ([a, m], [b, n]) => Number(b.startsWith('error')) - Number(a.startsWith('error')) || n - m
    for (const [key, c] of [...counts].sort(errorFirst).slice(0, 12)) console.log(`    ${String(c).padStart(6)}  ${key}`)
  }
}
