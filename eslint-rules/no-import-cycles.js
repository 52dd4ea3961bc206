// A local ESLint rule: no module under src/ may import itself back through a chain of
// relative imports (issue #6). Type-only imports count too: a cycle of types is a cycle
// of ideas. The graph is read from the files themselves, once per lint run.
import { existsSync, readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"`]*?from\s*['"](\.[^'"]+)['"]/g
const graph = new Map()

function resolveImport(from, spec) {
  const base = resolve(dirname(from), spec)
  for (const candidate of [base.replace(/\.js$/, '.ts'), base, `${base}.ts`, resolve(base, 'index.ts')]) {
    if (candidate.endsWith('.ts') && existsSync(candidate)) return candidate
  }
  return null
}

function importsOf(file) {
  let found = graph.get(file)
  if (found) return found
  found = []
  graph.set(file, found)
  let text = ''
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    return found
  }
  for (const match of text.matchAll(IMPORT)) {
    const target = resolveImport(file, match[1])
    if (target) found.push(target)
  }
  return found
}

/** The shortest chain of imports from `start` back to itself, or null. */
function cycleThrough(start) {
  const seen = new Map([[start, null]])
  const queue = [start]
  while (queue.length > 0) {
    const file = queue.shift()
    for (const next of importsOf(file)) {
      if (next === start) {
        const chain = [start]
        for (let at = file; at !== start; at = seen.get(at)) chain.splice(1, 0, at)
        return chain
      }
      if (!seen.has(next)) {
        seen.set(next, file)
        queue.push(next)
      }
    }
  }
  return null
}

export default {
  meta: { type: 'problem', docs: { description: 'disallow import cycles between modules' }, schema: [] },
  create(context) {
    const file = context.filename
    return {
      Program(node) {
        const chain = cycleThrough(file)
        if (!chain) return
        const root = context.cwd
        const names = chain.map((f) => f.replace(`${root}/`, ''))
        context.report({ node, message: `import cycle: ${[...names, names[0]].join(' -> ')}` })
      },
    }
  },
}
