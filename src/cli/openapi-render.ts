import { createGateway } from '../compose.js'
import { loadConfig } from '../config.js'

// The committed documents (docs/openapi.json, docs/admin-openapi.json) are the ones a
// gateway with the default settings serves; the platform address and token only let the
// gateway be built; it neither starts nor listens, so nothing is called.
const DOCUMENT_ENV = { PLATFORM_BASE_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN: 'openapi-document-only', LOG_LEVEL: 'silent' }

/** The OpenAPI document of one listener with the default settings, as committed. */
async function render(listener: 'proxy' | 'admin'): Promise<string> {
  const gateway = await createGateway(loadConfig({ env: DOCUMENT_ENV }))
  try {
    await gateway[listener].ready()
    return `${JSON.stringify(gateway[listener].swagger(), null, 2)}\n`
  } finally {
    await gateway.close()
  }
}

/** The proxy listener's OpenAPI document (docs/openapi.json). */
export function renderDocument(): Promise<string> {
  return render('proxy')
}

/** The admin listener's OpenAPI document (docs/admin-openapi.json). */
export function renderAdminDocument(): Promise<string> {
  return render('admin')
}
