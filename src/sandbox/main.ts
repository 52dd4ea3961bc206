import { pino } from 'pino'
import { hostPort } from '../host-port.js'
import { listenFailure } from '../listen-failure.js'
import { DEFAULT_SANDBOX_SEED } from './seed.js'

// `npm run sandbox`: the platform stand-in on its own, for benchmarks and for
// pointing a gateway at it by hand (PLATFORM_BASE_URL=<url>). The server's modules load
// once the command line and environment are read: --help and a usage mistake answer without them.

const DEFAULT_PORT = 8090
const USAGE = `usage: npm run sandbox
  the platform stand-in alone; its log prints its URL and the demo credentials
environment: HOST (default 127.0.0.1), PORT (default ${DEFAULT_PORT}), SANDBOX_SEED (default ${DEFAULT_SANDBOX_SEED}),
  SANDBOX_LATENCY_MS (default 0): whole numbers
exit code: 0 stopped by SIGINT or SIGTERM, 1 it failed, 2 a usage mistake.`
const log = pino({ base: { service: 'platform-sandbox' } })

/** A mistake in the command line or environment: one line on stderr, exit code 2. */
class UsageError extends Error {}

/** A listener that cannot open (a port in use, a host that does not resolve): one line on stderr, exit code 1. */
class ListenError extends Error {}

/** `err` as a ListenError when the listen (or the host's lookup before it) failed, else as it is. */
function listenError(err: unknown, host: string, port: number): unknown {
  const { syscall } = err as NodeJS.ErrnoException
  if (syscall !== 'listen' && syscall !== 'getaddrinfo') return err
  return new ListenError(`cannot listen on ${hostPort(host, port)}: ${listenFailure(err as NodeJS.ErrnoException)} (set HOST, PORT)`)
}

function integerEnv(name: string, fallback: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isSafeInteger(value) || value < 0) throw new UsageError(`${name} must be a whole number >= 0, got "${raw}"`)
  return value
}

async function main(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`)
    return
  }
  if (argv.length > 0) throw new UsageError(`no arguments but --help, got "${argv[0]}"`)
  const options = {
    host: process.env.HOST ?? '127.0.0.1',
    port: integerEnv('PORT', DEFAULT_PORT),
    seed: integerEnv('SANDBOX_SEED', DEFAULT_SANDBOX_SEED),
    latencyMs: integerEnv('SANDBOX_LATENCY_MS', 0),
  }
  const { startSandbox } = await import('./sandbox.js')
  const sandbox = await startSandbox(options).catch((err: unknown) => {
    throw listenError(err, options.host, options.port)
  })
  log.info({ url: sandbox.url, credentials: sandbox.credentials, accounts: sandbox.accounts }, 'platform sandbox listening')
  const stop = (signal: NodeJS.Signals): void => {
    log.info({ signal }, 'platform sandbox closing')
    sandbox.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'platform sandbox did not close cleanly')
        process.exit(1)
      },
    )
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof UsageError) {
    process.stderr.write(`sandbox: ${err.message} (npm run sandbox -- --help)\n`)
    process.exitCode = 2
    return
  }
  if (err instanceof ListenError) {
    process.stderr.write(`sandbox: ${err.message}\n`)
    process.exitCode = 1
    return
  }
  log.fatal({ err }, 'platform sandbox failed to start')
  process.exitCode = 1
})
