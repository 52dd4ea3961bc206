import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { NotFoundError } from '../../errors.js'
import { answerAsPages, CONSOLE_CSP } from './page-headers.js'
import { CONSOLE_CSS, CONSOLE_HTML, CONSOLE_ICON, CONSOLE_LIBRARY, CONSOLE_SCRIPTS, CONSOLE_SCRIPTS_DIR } from '../../console/console-assets.js'

/**
 * The operations console on the admin listener: GET /console and its files. A plugin's
 * scope of its own: its hook writes the page's headers on every answer of these routes,
 * a file it does not serve (404) included, and on no other route.
 */
export async function consoleRoutes(app: FastifyInstance, { scriptsDir = CONSOLE_SCRIPTS_DIR }: { scriptsDir?: string }): Promise<void> {
  answerAsPages(app, CONSOLE_CSP)
  app.get('/console', async (_request, reply) => reply.type('text/html; charset=utf-8').send(CONSOLE_HTML))
  app.get('/console/console.css', async (_request, reply) => reply.type('text/css; charset=utf-8').send(CONSOLE_CSS))
  app.get('/console/icon.svg', async (_request, reply) => reply.type('image/svg+xml').send(CONSOLE_ICON))
  for (const [file, { path, type }] of Object.entries(CONSOLE_LIBRARY)) {
    const body = await readFile(path, 'utf8')
    app.get(`/console/${file}`, async (_request, reply) => reply.type(type).send(body))
  }
  app.get<{ Params: { file: string } }>('/console/:file', async (request, reply) => {
    const { file } = request.params
    if (!CONSOLE_SCRIPTS.has(file)) throw new NotFoundError()
    const script = await readFile(join(scriptsDir, file), 'utf8').catch(() => null)
    if (script === null) throw new NotFoundError()
    return reply.type('text/javascript; charset=utf-8').send(script)
  })
}
