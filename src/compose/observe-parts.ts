import { pino, type DestinationStream, type Logger } from 'pino'
import type { Config } from '../config.js'
import type { Clock } from '../clock.js'
import { SecretSet, loggerOptions } from '../observe/logger.js'
import { createMetrics, type Metrics } from '../observe/metrics.js'
import { buildInfo, type BuildInfo } from '../observe/build-info.js'
import { FailureLog } from '../observe/failure-log.js'
import { History } from '../observe/history.js'
import { AUDIT_LINES, AuditTrail, auditLog } from '../access/audit-trail.js'

/** What the gateway says of itself: its log, its metrics, its failures and its last hour. */
export interface ObserveParts {
  /** Every secret of the configuration, and every platform token since the start: redacted from the log, refused in requests (Admission). */
  secrets: SecretSet
  /** The last audit lines of the log, for the console. */
  audit: AuditTrail
  log: Logger
  /** `log` for the audit lines: written whatever the log level. */
  auditLog: Logger
  metrics: Metrics
  /** What runs, and since when. */
  build: BuildInfo & { startedAt: number }
  failures: FailureLog
  history: History
}

export function observeParts(config: Config, o: { clock: Clock; logger?: Logger; logStream?: DestinationStream }): ObserveParts {
  const secrets = new SecretSet()
  for (const s of config.secrets) secrets.add(s)
  for (const s of config.scrubbedSecrets) secrets.addScrubbed(s)
  for (const s of config.shortLoginSecrets) secrets.addLogOnly(s)
  const audit = new AuditTrail(AUDIT_LINES, secrets)
  const log = o.logger ?? pino(loggerOptions(config.logLevel, secrets), audit.tee(o.logStream))
  const metrics = createMetrics()
  const build = { ...buildInfo(), startedAt: o.clock.now() }
  metrics.buildInfo.set({ version: build.version, commit: build.commit, node: build.node }, 1)
  return {
    secrets,
    audit,
    log,
    auditLog: auditLog(log),
    metrics,
    build,
    // Failures answered as documented: one warn line each, a flood summed up (no stacks).
    failures: new FailureLog({ log, clock: o.clock }),
    // This replica's last hour: requests counted where they are logged, calls where they are sent.
    history: new History({ clock: o.clock }),
  }
}
