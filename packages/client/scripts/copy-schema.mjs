import { copyFileSync } from 'node:fs'

// tsc emits no file for a declaration file: the generated types (src/schema.d.ts), which
// dist/index.d.ts imports, are copied beside it as they are.
copyFileSync(new URL('../src/schema.d.ts', import.meta.url), new URL('../dist/schema.d.ts', import.meta.url))
