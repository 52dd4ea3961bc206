import { writeFileSync } from 'node:fs'
import { renderDocument } from '../openapi/render.js'

// npm run openapi [-- FILE]: writes the proxy listener's OpenAPI 3.1 document.
const file = process.argv[2] ?? 'docs/openapi.json'
writeFileSync(file, await renderDocument())
process.stdout.write(`wrote ${file}\n`)
