import { writeFileSync } from 'node:fs'
import { renderDocument } from './openapi-render.js'

const USAGE = `usage: npm run openapi [-- FILE]
  writes the proxy listener's OpenAPI 3.1 document (default FILE: docs/openapi.json)
exit code: 0 written, 1 the file cannot be written, 2 a usage mistake.`

function main(argv: string[]): Promise<number> | number {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`)
    return 0
  }
  const [file = 'docs/openapi.json', ...extra] = argv
  if (extra.length > 0 || file.startsWith('-')) {
    process.stderr.write(`openapi: one FILE at most, no options but --help (npm run openapi -- --help)\n`)
    return 2
  }
  return write(file)
}

async function write(file: string): Promise<number> {
  const text = await renderDocument()
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
