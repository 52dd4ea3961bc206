import { pino } from 'pino'
import { DEFAULT_SANDBOX_SEED, startSandbox } from './sandbox.js'

// `npm run sandbox`: the platform stand-in on its own, for benchmarks and for
// pointing a gateway at it by hand (PLATFORM_BASE_URL=<url>).

const DEFAULT_PORT = 8090
const log = pino({ base: { service: 'platform-sandbox' } })

function integerEnv(name: string, fallback: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${name} must be a whole number >= 0, got "${raw}"`)
  return value
}

async function main(): Promise<void> {
  const sandbox = await startSandbox({
    host: process.env.HOST ?? '127.0.0.1',
    port: integerEnv('PORT', DEFAULT_PORT),
    seed: integerEnv('SANDBOX_SEED', DEFAULT_SANDBOX_SEED),
    latencyMs: integerEnv('SANDBOX_LATENCY_MS', 0),
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

main().catch((err: unknown) => {
  log.fatal({ err }, 'platform sandbox failed to start')
  process.exitCode = 1
})
