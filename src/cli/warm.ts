import { SingleBar } from 'cli-progress'
import { maskUrlPassword } from '../config/mask-url.js'
import { describeTally, planWarm, UsageError, USAGE, warmOptions, type WarmOptions } from './warm-plan.js'
import { openJobs, plainProgress } from './warm-progress.js'
import { RedirectRefused, runWarm, type WarmProgress } from './warm-run.js'

// npm run warm -- --advertisers 101,102 --from 2026-11-01 --to 2026-11-21 [...]: asks the
// gateway for the usual reports so that callers find them cached. The Helm
// chart runs it as a CronJob (templates/cronjob-cache-warm.yaml).

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`)
    return 0
  }
  let opts: WarmOptions
  try {
    opts = warmOptions(argv, process.env)
  } catch (err) {
    if (!(err instanceof UsageError)) throw err
    process.stderr.write(`warm: ${err.message} (npm run warm -- --help)\n`)
    return 2
  }
  const requests = planWarm(opts)
  process.stdout.write(
    `warm: ${requests.length} reports (advertisers ${opts.advertisers.join(',')}; splits ${opts.splits.join(',')}; ${opts.from} to ${opts.to}) ` +
      `through ${String(maskUrlPassword(opts.baseUrl))}, ${opts.concurrency} at a time${opts.jobs ? ', as jobs' : ''}\n`,
  )
  const started = performance.now()
  const progress = showProgress(requests.length)
  let result
  try {
    result = await runWarm(opts, requests, progress.update)
  } catch (err) {
    if (!(err instanceof RedirectRefused)) throw err
    progress.stop()
    process.stderr.write(`warm: ${err.message}\n`)
    return 1
  }
  progress.stop()
  for (const line of result.failures) process.stderr.write(`warm: ${line}\n`)
  process.stdout.write(`warm: done in ${((performance.now() - started) / 1000).toFixed(1)} s: ${describeTally(result.tally)}\n`)
  return result.tally.failed > 0 ? 1 : 0
}

// A bar on a terminal; in a job's log, a plain line every few seconds instead.
function showProgress(total: number): { update: (p: WarmProgress) => void; stop: () => void } {
  if (process.stderr.isTTY) {
    const bar = new SingleBar({ stream: process.stderr, format: 'warm [{bar}] {value}/{total} | warmed {warmed}, fresh {fresh}, failed {failed}{jobs}', hideCursor: true })
    bar.start(total, 0, { warmed: 0, fresh: 0, failed: 0, jobs: '' })
    return { update: (p) => bar.update(p.done, { ...p.tally, jobs: openJobs(p) }), stop: () => bar.stop() }
  }
  return plainProgress(total, (line) => process.stdout.write(line))
}

process.exitCode = await main(process.argv.slice(2))
