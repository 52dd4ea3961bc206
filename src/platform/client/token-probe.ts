import type { Logger } from 'pino'
import type { Config } from '../../config.js'
import type { PlatformClient } from './platform-client.js'
import type { TokenProvider } from '../tokens/token-provider.js'
import type { TokenRegistry } from '../tokens/token-registry.js'
import { ownRequestId } from '../../observe/request-id.js'
import { connectionFailure } from './connection-failure.js'

type ProbeCall = Config['platform']['probe']


/**
 * The status the platform gives `token` on the configured probe call (`platform.probe`);
 * null when there is no probe or no platform address. Network failures are thrown. It
 * checks a token offered to PUT /admin/token, a configured token at start, and a token
 * the platform answered 401 to (token-verdict.ts), and tests a credential pause (a 429,
 * platform-governors.ts): then it is a `trial` and goes through the pause.
 */
export async function probeStatus(client: PlatformClient, probe: ProbeCall, provider: TokenProvider, token: string, trial = false): Promise<number | null> {
  const baseUrl = provider.credential.baseUrl
  if (!probe || !baseUrl) return null
  return client.probe(provider.name, baseUrl, token, {
    method: probe.method,
    url: probe.path,
    headers: { accept: 'application/json', ...(probe.method === 'POST' ? { 'content-type': 'application/json' } : {}) },
    body: probe.method === 'POST' ? '{}' : null,
    requestId: ownRequestId('token-probe'),
    trial,
  })
}

/**
 * A configured token (static or file) is checked once at start: a token the
 * platform refuses shows as degraded at once (readiness body, metrics, the loud log
 * line) rather than at the first caller's 502. A login token was just handed out by the
 * platform and is not checked again. A probe that cannot reach the platform decides nothing.
 */
export async function probeTokens(tokens: TokenRegistry, client: PlatformClient, probe: ProbeCall, log: Logger, paused: (credential: string) => boolean): Promise<void> {
  // A credential the platform throttles (429), or the probe's own route, is not called on top.
  await Promise.all(tokens.all().filter((p) => !paused(p.name)).map((provider) => probeOne(provider, client, probe, log)))
}

async function probeOne(provider: TokenProvider, client: PlatformClient, probe: ProbeCall, log: Logger): Promise<void> {
  const state = provider.current()
  if (!state || (state.source !== 'static' && state.source !== 'file')) return
  let status: number | null
  try {
    status = await probeStatus(client, probe, provider, state.token)
  } catch (err) {
    // A connection's failure in the words a caller's 502 says it (connectionFailure), else the error's message.
    const cause = (err as { cause?: unknown }).cause
    const coded = typeof (cause as { code?: unknown } | undefined)?.code === 'string'
    log.warn({ credential: provider.name, cause: coded ? connectionFailure(cause) : (err as Error).message }, 'platform token not checked at start: the probe call failed')
    return
  }
  if (status === 401 || status === 403) await provider.recover(state.token, true)
}
