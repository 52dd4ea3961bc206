/**
 * docs/design.md draws the code as it is: every source file it names exists under src/
 * (a name with folders, as `http/reads/fast-path.ts`, at that path), and it names every
 * file of the governor (src/platform/governor/), whose list it gives whole beside
 * docs/governor.md.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const DESIGN = readFileSync(join(ROOT, 'docs/design.md'), 'utf8')
const SOURCES = (readdirSync(join(ROOT, 'src'), { recursive: true }) as string[]).filter((name) => name.endsWith('.ts'))

describe('docs/design.md against the tree', () => {
  it('names no source file that does not exist', () => {
    const named = new Set(DESIGN.match(/[\w./-]*\b[\w-]+\.ts\b/g) ?? [])
    const missing = [...named].map((name) => name.replace(/^(\.\.\/)?src\//, '')).filter((name) => !SOURCES.some((file) => file === name || file.endsWith(`/${name}`)))
    expect(missing).toEqual([])
  })

  it('names every file of the governor', () => {
    const governor = readdirSync(join(ROOT, 'src/platform/governor')).filter((name) => name.endsWith('.ts'))
    expect(governor.length).toBeGreaterThan(0)
    expect(governor.filter((name) => !new RegExp(`\\b${name.replace('.', '\\.')}\\b`).test(DESIGN))).toEqual([])
  })
})
