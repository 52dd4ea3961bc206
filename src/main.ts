import { startConfig, ConfigError } from './config.js'
import { scrubSecrets, startSecrets } from './observe/start-secrets.js'
import type { FastifyInstance } from 'fastify'
import type { Gateway } from './compose.js'
import type { Sandbox } from './sandbox/sandbox.js'
import { nodeRefusal } from './observe/build-info.js'
import { hostPort } from './host-port.js'
import { listenFailure } from './listen-failure.js'
import { crashLine } from './observe/crash-line.js'

// After the grace: time for aborted calls' answers to be written, then for the rest of close().
const ANSWER_ABORTED_MS = 500
const LAST_WORDS_MS = 1500
// The most an exit waits for the log's last lines to be written (a reader of stdout that is slow).
const LOG_FLUSH_MS = 1000

/** The gateway's log, once createGateway made it. */
let gatewayLog: Gateway['log'] | null = null
/** A crash is under way: one that follows while its line is written adds none. */
let crashing = false

async function main(): Promise<void> {
  // The stop signals are handled from the first moment: the image runs node as PID 1 of
  // its namespace, where the kernel drops a signal that has no handler, so a SIGTERM sent
  // while the start waits (on the platform, Redis, the other replicas) was lost and the
  // replica went on to serve until the kubelet's SIGKILL. A stop during the start ends
  // it: the process exits 0 without serving, what it took in Redis lapsing as after a
  // SIGKILL (a lock's or lease's life). Once the gateway serves (readiness 200), `stop`
  // below drains, also while the start's last steps run.
  // A reader of stdout or stderr that went away (`npm start | head`, a log shipper that
  // died) fails each write with EPIPE: the lines are lost, the gateway serves on. Unheard,
  // the error ended the process at its next write (the demo's banner).
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined)
  process.on('uncaughtException', (err) => crash('crashed: an exception no code caught', err))
  process.on('unhandledRejection', (reason) => crash('crashed: a rejection no code handled', reason))
  const stopBeforeServing = (signal: string) => {
    if (gatewayLog) {
      gatewayLog.info({ signal }, 'stopped during the start, before serving')
      void exitAfterLog(gatewayLog, 0)
      return
    }
    process.stderr.write(`report-gateway: stopped during the start, before serving (${signal})\n`)
    process.exit(0)
  }
  let onStop: (signal: string) => void = stopBeforeServing
  process.on('SIGTERM', () => onStop('SIGTERM'))
  process.on('SIGINT', () => onStop('SIGINT'))
  // SIGHUP's default action ends a process: one that comes during the start is kept and
  // the reload it asks for runs once the gateway serves.
  let reloadAsked = false
  let onReload = () => void (reloadAsked = true)
  process.on('SIGHUP', () => onReload())
  const refusal = nodeRefusal()
  if (refusal !== null) {
    process.stderr.write(`report-gateway: ${refusal}; npm start runs the Node that npm ci installs (npm run runtime says which)\n`)
    process.exit(1)
  }
  const started = await startConfig()
  if (started instanceof ConfigError) {
    // A secret pasted into another setting, repeated by the check that names its value, is never printed.
    process.stderr.write(`report-gateway: ${scrubSecrets(started.message, startSecrets(process.env))}\n`)
    process.exit(78)
  }
  let config = started

  // The gateway's modules (Fastify, ioredis, the platform client) load once the
  // configuration holds: a start refused above stops having loaded the configuration's alone.
  // The sandbox and the demo's settings load in demo mode only: a configured replica's start
  // does not read, compile and run them (test/integration/start-modules.test.ts).
  const [{ createGateway }, { redisAddress }, demoModules] = await Promise.all([
    import('./compose.js'),
    import('./redis/client.js'),
    config.demo ? Promise.all([import('./demo.js'), import('./sandbox/sandbox.js')]) : null,
  ])
  // In demo mode: the sandbox it runs, the key and admin token made for this run, and what prints them.
  let demo: { sandbox: Sandbox; key: string; team: string; adminToken: string | null; curl: typeof import('./demo.js').demoCurl; reachable: typeof import('./demo.js').reachableOrigin; defaultTeam: string } | null = null
  if (demoModules) {
    const [{ demoConfig, demoCurl, reachableOrigin, DEMO_TEAM }, { startSandbox }] = demoModules
    const sandbox = await startSandbox({ host: '127.0.0.1', port: 0, grantType: config.platform.grantType })
    const made = demoConfig(config, sandbox)
    config = made.config
    demo = { sandbox, key: made.key, team: made.team, adminToken: made.adminToken, curl: demoCurl, reachable: reachableOrigin, defaultTeam: DEMO_TEAM }
  }

  const gateway = await createGateway(config)
  const log = gateway.log
  gatewayLog = log
  // A setting set under a name of the last release, say: taken, and said at every start.
  for (const warning of config.warnings) log.warn(warning)

  let stopping: string | null = null
  // Ends the drain early: a second signal while it runs. Under `npm start` npm forwards
  // each SIGTERM and SIGINT it gets to the gateway, so a signal sent to the process group
  // (systemd's SIGTERM, a terminal's Ctrl-C, `kill -- -<pgid>`) arrives twice: there a
  // second signal of the name that began the stop is that same stop, and another name ends the drain.
  const forwardedByNpm = process.env.npm_lifecycle_event !== undefined
  let endDrain: (() => void) | null = null
  const stop = async (signal: string) => {
    if (stopping !== null) {
      if (!(forwardedByNpm && signal === stopping)) endDrain?.()
      return
    }
    stopping = signal
    // SIGTERM (Kubernetes, docker stop, systemd) and SIGINT (Ctrl-C, a process manager's
    // stop) drain: readiness 503 at once, both listeners still taking connections and
    // answering, with `connection: close`, until every balancer has taken this replica out.
    const drainMs = config.shutdownDrainMs
    gateway.drain()
    if (drainMs > 0) {
      log.info({ signal, drainMs, graceMs: config.shutdownGraceMs }, 'draining: readiness 503, still answering (with connection: close) until the drain ends')
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, drainMs)
        endDrain = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      endDrain = null
    }
    log.info({ signal, graceMs: config.shutdownGraceMs }, 'shutting down: no new connections, waiting for requests in flight')
    // At the end of the grace, calls still at the platform are aborted: their callers are
    // answered (GW_SHUTTING_DOWN or a stale copy) and the connections still open are then
    // cut, so the process exits within the drain, the grace and a moment, before Kubernetes' SIGKILL.
    const force = setTimeout(() => {
      log.warn('grace period over: aborting platform calls and closing remaining connections')
      gateway.abortPlatformCalls()
      setTimeout(() => {
        gateway.proxy.server.closeAllConnections()
        gateway.admin.server.closeAllConnections()
      }, ANSWER_ABORTED_MS).unref()
      setTimeout(() => {
        log.warn('still closing after the grace period: exiting')
        void exitAfterLog(log, 0)
      }, ANSWER_ABORTED_MS + LAST_WORDS_MS).unref()
    }, config.shutdownGraceMs)
    force.unref()
    try {
      // The start's last steps (the replicas' announcement, their subscriptions) end before
      // close() undoes them; one that never ends is cut by the grace's exit above.
      await starting
      await gateway.close()
      await demo?.sandbox.close()
      log.info('stopped')
      await exitAfterLog(log, 0)
    } catch (err) {
      log.error({ err }, 'error while shutting down')
      await exitAfterLog(log, 1)
    }
  }
  // Listens before its first platform call and token: a process that cannot listen (a
  // port taken by a running replica) exits without logging in, auditing a token change
  // or replacing the replicas' token.
  const starting = gateway.start(async () => {
    await listenOrExit(gateway.proxy, config.host, config.port, 'HOST, PORT')
    await listenOrExit(gateway.admin, config.admin.host, config.admin.port, 'ADMIN_HOST, ADMIN_PORT')
  })
  // Readiness answers 200 a moment before the start returns (the replicas' announcement
  // follows): a stop from that moment drains, the requests balancers sent meanwhile answered.
  onStop = (signal) => (gateway.serving() ? void stop(signal) : stopBeforeServing(signal))
  await starting
  const proxyPort = (gateway.proxy.server.address() as { port: number }).port
  const adminPort = (gateway.admin.server.address() as { port: number }).port
  log.info(
    {
      proxy: hostPort(config.host, proxyPort),
      admin: hostPort(config.admin.host, adminPort),
      redis: redisState(gateway, redisAddress),
      credentials: Object.keys(config.credentials),
      teams: config.teams.map((t) => t.name),
    },
    'report gateway listening',
  )
  if (demo) {
    const { sandbox } = demo
    const child = sandbox.accounts.find((a) => a.parentId !== null && a.parentId === sandbox.accounts[0]?.id) ?? sandbox.accounts[0]
    const consoleUrl = `${demo.reachable(config.admin.host, adminPort)}/console`
    // The demo key and admin token are printed on purpose: they are made for this run and open only the sandbox.
    process.stdout.write(
      `\nDemo mode (${process.env.DEMO === '1' ? 'DEMO=1' : 'nothing configured'}): the bundled platform sandbox runs at ${sandbox.url}.\n` +
        `Demo team key (valid for this run only${demo.team === demo.defaultTeam ? '' : `; its team is ${demo.team}, as a configured team is named ${demo.defaultTeam}`}): ${demo.key}\n` +
        `Try:\n  ${demo.curl(config.host, proxyPort, demo.key, child?.id ?? 101)}\n` +
        (demo.adminToken === null
          ? `Operations console: ${consoleUrl} (sign in with your admin token)\n\n`
          : `Admin token (an operator's, valid for this run only): ${demo.adminToken}\nOperations console: ${consoleUrl} (sign in with the admin token above)\n\n`),
    )
  }

  onReload = () => {
    try {
      gateway.reloader.reload('signal')
    } catch {
      // Refused or impossible: reload logged why; the running teams stay.
    }
  }
  if (reloadAsked) onReload()
}

/**
 * Exits with `code` once the log's lines are written, or could not be (stdout with no
 * reader), waiting LOG_FLUSH_MS at most. The exit is not left to write them: pino's flush of
 * stdout at the exit retries a write that met EPIPE for ever, and the process never ended.
 */
async function exitAfterLog(log: Gateway['log'], code: number): Promise<never> {
  await new Promise<void>((resolve) => {
    const bound = setTimeout(resolve, LOG_FLUSH_MS)
    log.flush(() => {
      clearTimeout(bound)
      resolve()
    })
  })
  process.exit(code)
}

// A listener that cannot open is an operator's problem, said in one line with what to
// do: a stack trace would bury it.
async function listenOrExit(app: FastifyInstance, host: string, port: number, settings: string): Promise<void> {
  try {
    await app.listen({ host, port })
  } catch (err) {
    process.stderr.write(`report-gateway: ${scrubSecrets(`cannot listen on ${hostPort(host, port)}: ${listenFailure(err as NodeJS.ErrnoException)}`, startSecrets(process.env))} (set ${settings})\n`)
    process.exit(1)
  }
}

function redisState(gateway: Gateway, address: (redis: Gateway['config']['redis']) => string): string {
  const { client, breaker } = gateway.redis
  if (!client || !breaker) return 'off (in-memory cache only)'
  return `${breaker.state === 'closed' ? 'up' : 'down'} (${address(gateway.config.redis)})`
}

/**
 * A crash (an exception no code caught, a rejection no code handled, a start that failed)
 * ends the process with exit 1 and one JSON line naming the error: the logger's once it
 * runs (its secrets scrubbed, as in every line), else crashLine's. Node's own report was a
 * stack over several lines, no log shipper's JSON, a secret in the error's message and all.
 */
function crash(msg: string, err: unknown): void {
  if (crashing) return
  crashing = true
  if (gatewayLog) {
    gatewayLog.fatal({ err }, msg)
    void exitAfterLog(gatewayLog, 1)
    return
  }
  process.stdout.write(crashLine(msg, err, startSecrets(process.env)))
  process.exit(1)
}

main().catch((err: unknown) => crash('failed to start', err))
