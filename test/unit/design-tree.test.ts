/**
 * docs/design.md draws the code as it is: every source file it names exists under src/
 * (a name with folders, as `http/reads/fast-path.ts`, at that path), and it names every
 * file of the governor (src/platform/governor/), whose list it gives whole beside
 * docs/governor.md. Its folder tree lists the rooms of src/ by layer from the top down,
 * and every import runs down that list or stays in its room: a room never imports one
 * listed above it. Names on one line of the tree (`config.ts, config/`) are one layer.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const DESIGN = readFileSync(join(ROOT, 'docs/design.md'), 'utf8')
const SOURCES = (readdirSync(join(ROOT, 'src'), { recursive: true }) as string[]).filter((name) => name.endsWith('.ts'))

/** The layer of each room the tree names (`http`, `main.ts`), 0 the top: its line's number among the tree's rooms. */
function layersOf(design: string): Map<string, number> {
  const tree = /```\nsrc\/\n([\s\S]*?)```/.exec(design)?.[1] ?? ''
  const lines = tree.split('\n').filter((line) => /^ {2}\S/.test(line))
  const layers = new Map<string, number>()
  lines.forEach((line, layer) => {
    const names = /^ {2}([^\s,]+(?:, [^\s,]+)*)/.exec(line)?.[1] ?? ''
    for (const name of names.split(', ')) layers.set(name.replace(/\/$/, ''), layer)
  })
  return layers
}

/** The room of a path under src/: its first folder, or the file itself at the top. */
const roomOf = (path: string): string => path.split('/')[0] as string

/** Each relative import of each source file, as `from -> to` (paths under src/). */
function importsOf(files: readonly string[]): { from: string; to: string }[] {
  return files.flatMap((from) => {
    const text = readFileSync(join(ROOT, 'src', from), 'utf8')
    const specs = [...text.matchAll(/^(?:import|export)\b[^'"]*?\bfrom\s+'(\.[^']+)'|^import\s+'(\.[^']+)'|\bimport\(\s*'(\.[^']+)'\s*\)/gm)].map((m) => (m[1] ?? m[2] ?? m[3]) as string)
    return specs.map((spec) => ({ from, to: normalize(join(dirname(from), spec)).replace(/\.js$/, '.ts') }))
  })
}

/** The imports among `imports` whose room stands above the importer's, each as `from -> to`; a room the layers do not name stands above all. */
function upward(imports: readonly { from: string; to: string }[], layers: ReadonlyMap<string, number>): string[] {
  return imports.filter(({ from, to }) => (layers.get(roomOf(to)) ?? -1) < (layers.get(roomOf(from)) ?? -1)).map(({ from, to }) => `${from} -> ${to}`)
}

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

describe('the layers of src/ (docs/design.md, Folders)', () => {
  const layers = layersOf(DESIGN)

  it('names the layer of every room of src/', () => {
    expect([...new Set(SOURCES.map(roomOf))].filter((room) => !layers.has(room))).toEqual([])
  })

  it('has no import that runs back up a layer', () => {
    const imports = importsOf(SOURCES)
    expect(imports.length).toBeGreaterThan(500)
    expect(upward(imports, layers)).toEqual([])
  })

  it('tells an import that runs back up from one that runs down or stays in its layer', () => {
    const order = layersOf('```\nsrc/\n  http/  the top\n    hooks/  within http\n  config.ts, config/  the ground\n```')
    const imports = [
      { from: 'http/server.ts', to: 'config/schema.ts' },
      { from: 'config/schema.ts', to: 'config.ts' },
      { from: 'config.ts', to: 'config/units.ts' },
      { from: 'config/normalize.ts', to: 'http/hooks/body-deadline.ts' },
    ]
    expect(upward(imports, order)).toEqual(['config/normalize.ts -> http/hooks/body-deadline.ts'])
  })
})
