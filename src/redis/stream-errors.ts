import { createRequire } from 'node:module'
import type { Duplex } from 'node:stream'
import type { RedisOptions } from 'ioredis'

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a mixin's constructor takes any arguments
type Connector = new (...args: any[]) => { connect(emitter: unknown): Promise<Duplex> }

// ioredis's own connectors, which its index does not export as values (only their types).
const { StandaloneConnector, SentinelConnector } = createRequire(import.meta.url)('ioredis/built/connectors/index.js') as Record<'StandaloneConnector' | 'SentinelConnector', Connector>

/**
 * `Base`, whose streams keep a listener for their errors as long as they live. ioredis
 * listens for a stream's first error only (it closes the stream and reconnects); a failing
 * connection may emit more than one (a TLS socket refused in its handshake: the alert,
 * then the decode error of what follows), and an error with no listener ends the process.
 * The later errors are of a stream ioredis already gave up: nothing is left to tell.
 */
function keepingStreamErrors(Base: Connector): NonNullable<RedisOptions['Connector']> {
  const Keeping = class extends Base {
    override async connect(emitter: unknown): Promise<Duplex> {
      const stream = await super.connect(emitter)
      stream.on('error', () => {})
      return stream
    }
  }
  return Keeping as unknown as NonNullable<RedisOptions['Connector']>
}

/** ioredis's connector to one node (standalone, each node of a Cluster), its streams' errors kept. */
export const StandaloneStreams = keepingStreamErrors(StandaloneConnector)
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- ioredis's endpoint and options, untyped there too
type SentinelBase = Connector & (new (...args: any[]) => { connectToSentinel(endpoint: unknown, options?: Partial<RedisOptions>): unknown })

/**
 * ioredis's connector to the master the sentinels name, its streams' errors kept, and so
 * are those of its connections to the Sentinels themselves (a Sentinel on TLS refusing a
 * handshake errs twice there as a node does).
 */
export const SentinelStreams = keepingStreamErrors(
  class extends (SentinelConnector as SentinelBase) {
    override connectToSentinel(endpoint: unknown, options?: Partial<RedisOptions>): unknown {
      return super.connectToSentinel(endpoint, { Connector: StandaloneStreams, ...options })
    }
  },
)
