/**
 * The README, docs/ (the operations guide's pages and the decision records with the rest)
 * and the other READMEs link to each other and to files of the repository: every
 * relative link names a file that exists inside the repository and, with an anchor, a
 * heading of that file (GitHub's anchors: lower case, punctuation dropped, spaces as
 * hyphens, a repeated heading suffixed -1, -2, …). The README stays a short entry point.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, isAbsolute, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const README_MAX_LINES = 400

const DOCUMENTS = [
  'README.md',
  'src/perf/README.md',
  'packages/client/README.md',
  ...(readdirSync(join(ROOT, 'docs'), { recursive: true }) as string[]).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`),
]

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-')
}

/** The lines of a Markdown text outside fenced code blocks (where `#` and `](` mean nothing). */
function proseLines(text: string): string[] {
  const lines: string[] = []
  let fence: string | null = null
  for (const line of text.split('\n')) {
    const opens = /^\s*(`{3,}|~{3,})/.exec(line)
    if (fence === null && opens) fence = opens[1]![0]!.repeat(opens[1]!.length)
    else if (fence !== null && line.trim().startsWith(fence)) fence = null
    else if (fence === null) lines.push(line)
  }
  return lines
}

/** The anchors a Markdown text's headings (and HTML ids) give, as GitHub makes them. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  for (const line of proseLines(text)) {
    const heading = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line)
    if (heading) {
      const base = anchorOf(heading[1]!)
      const n = seen.get(base) ?? 0
      seen.set(base, n + 1)
      anchors.add(n === 0 ? base : `${base}-${n}`)
    }
    for (const id of line.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(id[1]!)
  }
  return anchors
}

/** Every link and image target of a Markdown text, outside code blocks and code spans. */
function linksOf(text: string): string[] {
  const targets: string[] = []
  for (const line of proseLines(text)) {
    const prose = line.replace(/(`+)[\s\S]*?\1/g, '')
    for (const link of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) targets.push(link[1]!)
  }
  return targets
}

/**
 * What is wrong with the relative links of `file` (a path inside the repository) whose
 * text is `text`: each problem as `<link>: <why>`. Links with a scheme (https:, mailto:)
 * are not followed.
 */
function linkProblems(file: string, text: string, read: (path: string) => string = (path) => readFileSync(path, 'utf8')): string[] {
  const problems: string[] = []
  for (const link of linksOf(text)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue
    const hash = link.indexOf('#')
    const pathPart = decodeURIComponent(hash === -1 ? link : link.slice(0, hash))
    const anchor = hash === -1 ? null : decodeURIComponent(link.slice(hash + 1))
    const target = pathPart === '' ? file : isAbsolute(pathPart) ? join(ROOT, pathPart) : resolve(dirname(file), pathPart)
    const inside = relative(ROOT, target)
    if (inside.startsWith('..') || isAbsolute(inside)) {
      problems.push(`${link}: points outside the repository`)
      continue
    }
    if (target !== file && !existsSync(target)) {
      problems.push(`${link}: no such file (${inside})`)
      continue
    }
    if (anchor === null) continue
    if (target !== file && (statSync(target).isDirectory() || !target.endsWith('.md'))) {
      problems.push(`${link}: an anchor into ${inside}, which is not a Markdown file`)
      continue
    }
    const anchors = anchorsOf(target === file ? text : read(target))
    if (!anchors.has(anchor)) problems.push(`${link}: ${inside} has no heading with the anchor #${anchor}`)
  }
  return problems
}

describe('documentation links', () => {
  it(`keeps README.md to at most ${README_MAX_LINES} lines`, () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
    const lines = readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0)
    expect(lines).toBeLessThanOrEqual(README_MAX_LINES)
  })

  it('keeps dated run logs out of the README: the figures and the runs that measured them are in docs/benchmarks.md', () => {
    const prose = proseLines(readFileSync(join(ROOT, 'README.md'), 'utf8')).map((line) => line.replace(/(`+)[\s\S]*?\1/g, ''))
    expect(prose.join('\n').match(/\b20\d\d-\d\d-\d\d\b/g) ?? []).toEqual([])
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8')).toContain('](docs/benchmarks.md')
  })

  it('links every decision record from design.md', () => {
    const design = linksOf(readFileSync(join(ROOT, 'docs/design.md'), 'utf8'))
    const records = readdirSync(join(ROOT, 'docs/decisions')).filter((name) => name.endsWith('.md'))
    expect(records.length).toBeGreaterThanOrEqual(8)
    for (const record of records) expect(design, record).toContain(`decisions/${record}`)
  })

  it.each(DOCUMENTS)('every relative link of %s names a file of the repository and, with an anchor, one of its headings', (document) => {
    const file = join(ROOT, document)
    expect(linkProblems(file, readFileSync(file, 'utf8'))).toEqual([])
  })

  it("links nothing outside the client package from the client's README, which its tarball carries into an app's node_modules", () => {
    const dir = join(ROOT, 'packages/client')
    const outside = linksOf(readFileSync(join(dir, 'README.md'), 'utf8'))
      .filter((link) => !/^[a-z][a-z0-9+.-]*:/i.test(link) && !link.startsWith('#'))
      .filter((link) => relative(dir, resolve(dir, decodeURIComponent(link.split('#')[0]!))).startsWith('..'))
    expect(outside).toEqual([])
  })

  it('reads the links of the README, and anchors into the other documents', () => {
    const readme = linksOf(readFileSync(join(ROOT, 'README.md'), 'utf8'))
    expect(readme).toContain('docs/operations.md')
    expect(readme.filter((link) => /^docs\/[\w/-]+\.md#/.test(link)).length).toBeGreaterThan(10)
  })

  it('finds a missing file, a missing heading, an anchor into a folder and a link out of the repository', () => {
    const file = join(ROOT, 'docs/example.md')
    const text = [
      '# Example',
      '## Platform calls: the governor',
      '## Platform calls: the governor',
      'Good: [here](#platform-calls-the-governor), [again](#platform-calls-the-governor-1),',
      '[guide](operations/alerts.md#alert-gatewaytokenrefused), [readme](../README.md), ![shot](console.png),',
      '[site](https://example.com/nowhere.md), `[code span](missing.md)`.',
      'Broken: [gone](no-such-file.md), [heading](operations.md#no-such-heading),',
      '[folder](decisions/#top), [out](../../outside.md), [self](#nowhere).',
      '```md',
      '[in a code block](missing-too.md)',
      '```',
    ].join('\n')
    expect(linkProblems(file, text)).toEqual([
      'no-such-file.md: no such file (docs/no-such-file.md)',
      'operations.md#no-such-heading: docs/operations.md has no heading with the anchor #no-such-heading',
      'decisions/#top: an anchor into docs/decisions, which is not a Markdown file',
      '../../outside.md: points outside the repository',
      '#nowhere: docs/example.md has no heading with the anchor #nowhere',
    ])
  })
})
