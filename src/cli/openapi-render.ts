import { createGateway } from '../compose.js'
import { loadConfig } from '../config.js'

// The committed document (docs/openapi.json) is the one a gateway with the default
// settings serves; the platform address and token only let the gateway be built; it
// neither starts nor listens, so nothing is called.
const DOCUMENT_ENV = { PLATFORM_BASE_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN: 'openapi-document-only', LOG_LEVEL: 'silent' }

/** The proxy listener's OpenAPI document with the default settings, as committed. */
export async function renderDocument(): Promise<string> {
  const gateway = await createGateway(loadConfig({ env: DOCUMENT_ENV }))
  try {
    await gateway.proxy.ready()
    return `${JSON.stringify(gateway.proxy.swagger(), null, 2)}\n`
  } finally {
    await gateway.close()
  }
}
