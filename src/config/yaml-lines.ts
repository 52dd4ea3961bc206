import { LineCounter, isMap, isScalar, isSeq, parseDocument, type Document } from 'yaml'

// Where in its file a setting a problem names is written: a teams file of forty teams, or
// a config file of a hundred lines, is fixed at a line, not at a dotted path to count out.

/** A YAML file the configuration was read from: its variable and path, and the settings it holds. */
export interface YamlSource {
  /** CONFIG_FILE or TEAMS_FILE. */
  variable: string
  path: string
  /** Whether it holds only `teams:` (TEAMS_FILE), whose problems it answers for. */
  teamsOnly: boolean
}

/**
 * `problems` with, after each that begins with a setting written in one of `sources`
 * (`teams.growth.advertisers.1: must be …`), the line it is written on: `; line 7 of
 * TEAMS_FILE (teams.yaml)`. A problem of a setting written in no file (a variable, a
 * default), or a file that cannot be read or parsed now, is left as it is. A problem
 * that a setting is required is placed at the line of the mapping that lacks it; one of a
 * name the setting may not hold (a team's, a credential's), at that name's key.
 */
export function withLines(problems: string[], sources: readonly YamlSource[], readFile: (path: string) => string): string[] {
  if (sources.length === 0) return problems
  const parsed = new Map<YamlSource, { doc: Document; lines: LineCounter } | null>()
  const parse = (source: YamlSource) => {
    if (!parsed.has(source)) parsed.set(source, parseSource(source, readFile))
    return parsed.get(source) ?? null
  }
  return problems.map((problem) => {
    const setting = /^([^\s:]+): /.exec(problem)?.[1]
    if (setting === undefined) return problem
    const source = sources.find((s) => s.teamsOnly === (setting === 'teams' || setting.startsWith('teams.'))) ?? sources.find((s) => !s.teamsOnly)
    const file = source === undefined ? null : parse(source)
    if (source === undefined || file === null) return problem
    const required = problem.startsWith(`${setting}: required`)
    // A name the setting may not hold (`teams: ".." is not a valid team name`) is at its own key.
    const name = NAME_REFUSED.exec(problem.slice(setting.length + 2))?.[1]
    const at = required ? setting.slice(0, Math.max(0, setting.lastIndexOf('.'))) : name === undefined ? setting : `${setting}.${JSON.parse(name) as string}`
    const line = lineOf(file.doc, at, file.lines)
    return line === null ? problem : `${problem}; line ${line} of ${source.variable} (${source.path})`
  })
}

// A problem of a name under a setting: the name as JSON, then why it is refused.
const NAME_REFUSED = /^("(?:[^"\\]|\\.)*") is not a valid /

function parseSource(source: YamlSource, readFile: (path: string) => string): { doc: Document; lines: LineCounter } | null {
  try {
    const lines = new LineCounter()
    const doc = parseDocument(readFile(source.path), { lineCounter: lines })
    return doc.errors.length > 0 ? null : { doc, lines }
  } catch {
    return null
  }
}

/**
 * The line of the key (or list item) at the dotted path `setting` in `doc`; null when the
 * file does not write it. A map key may hold dots itself (a team named `ads.eu`): the
 * longest key the path goes on from is taken.
 */
function lineOf(doc: Document, setting: string, lines: LineCounter): number | null {
  let node: unknown = doc.contents
  let rest = setting
  let start: number | null = null
  while (rest !== '') {
    if (isMap(node)) {
      let best: { key: string; start: number; value: unknown } | null = null
      for (const pair of node.items) {
        if (!isScalar(pair.key) || pair.key.range == null) continue
        const key = String(pair.key.value)
        if ((rest === key || rest.startsWith(`${key}.`)) && (best === null || key.length > best.key.length)) best = { key, start: pair.key.range[0], value: pair.value }
      }
      if (best === null) return null
      start = best.start
      node = best.value
      rest = rest.slice(best.key.length + 1)
    } else if (isSeq(node)) {
      const index = /^(\d+)(?:\.|$)/.exec(rest)
      const item: unknown = index === null ? undefined : node.items[Number(index[1])]
      const range = (item as { range?: [number, number, number] } | undefined)?.range
      if (index === null || range == null) return null
      start = range[0]
      node = item
      rest = rest.slice(index[0].length)
    } else {
      return null
    }
  }
  return start === null ? null : lines.linePos(start).line
}
