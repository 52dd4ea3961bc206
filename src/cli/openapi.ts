import { writeFileSync } from 'node:fs'

const USAGE = `usage: npm run openapi [-- [--admin] FILE]
  writes the OpenAPI 3.1 documents: the proxy listener's to docs/openapi.json and the admin
  listener's to docs/admin-openapi.json; with FILE, the proxy listener's (with --admin,
  the admin listener's) to FILE only.
exit code: 0 written, 1 a file cannot be written, 2 a usage mistake.`

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`)
    return 0
  }
  const admin = argv[0] === '--admin'
  const files = admin ? argv.slice(1) : argv
  if (files.length > 1 || files.some((f) => f.startsWith('-')) || (admin && files.length === 0)) {
    process.stderr.write(`openapi: at most one FILE, and --admin only before one (npm run openapi -- --help)\n`)
    return 2
  }
  // The gateway's modules load for a document to render, not for the help or a usage mistake.
  const { renderAdminDocument, renderDocument } = await import('./openapi-render.js')
  const [file] = files
  if (file === undefined) {
    const proxy = write('docs/openapi.json', await renderDocument())
    return proxy === 0 ? write('docs/admin-openapi.json', await renderAdminDocument()) : proxy
  }
  return write(file, await (admin ? renderAdminDocument() : renderDocument()))
}

function write(file: string, text: string): number {
  try {
    writeFileSync(file, text)
  } catch (err) {
    process.stderr.write(`openapi: cannot write ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})\n`)
    return 1
  }
  process.stdout.write(`wrote ${file}\n`)
  return 0
}

process.exitCode = await main(process.argv.slice(2))
