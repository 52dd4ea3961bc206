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
 * Where a problem points: `path`, the setting it begins with (`teams.growth.advertisers.1`;
 * null for one that names a variable, or nothing), and the file that writes it, by its
 * variable and path, and the line there; null where no file does.
 */
export interface ProblemPlace {
  message: string
  path: string | null
  variable: string | null
  file: string | null
  line: number | null
}

/**
 * Each of `problems` with its place: the line of one of `sources` that writes the setting
 * it begins with. A problem of a setting written in no file (a variable, a default), or a
 * file that cannot be read or parsed now, has none. A problem that a setting is required
 * is placed at the line of the mapping that lacks it; one of a name the setting may not
 * hold (a team's, a credential's), at that name's key. `lineFiles`: the variables naming a
 * file of one entry a line (ADMIN_TOKENS_FILE), each with its path: a problem one begins
 * with is placed in that file, at the line it names.
 */
export function placesOf(problems: readonly string[], sources: readonly YamlSource[] = [], readFile: (path: string) => string = () => '', lineFiles: Readonly<Record<string, string>> = {}): ProblemPlace[] {
  const parsed = new Map<YamlSource, { doc: Document; lines: LineCounter } | null>()
  const parse = (source: YamlSource) => {
    if (!parsed.has(source)) parsed.set(source, parseSource(source, readFile))
    return parsed.get(source) ?? null
  }
  return problems.map((message) => {
    // A file that could not be read or parsed (sources.ts readYamlObject): its variable and
    // path, and the line of a YAML error, are in its message's words.
    const unusable = UNUSABLE_FILE.exec(message)
    if (unusable !== null) return { message, path: null, variable: unusable[1]!, file: unusable[2]!, line: unusable[3] === undefined ? null : Number(unusable[3]) }
    // A key of TEAMS_FILE beside teams: (teams-file.ts): at that key's line of the file.
    const stray = STRAY_TEAMS_KEY.exec(message)
    if (stray !== null) {
      const source = sources.find((s) => s.teamsOnly && s.path === stray[1])
      const file = source === undefined ? null : parse(source)
      const line = file === null ? null : topKeyLine(file.doc, stray[2]!, file.lines)
      return { message, path: null, variable: 'TEAMS_FILE', file: stray[1]!, line }
    }
    const setting = /^([^\s:]+): /.exec(message)?.[1]
    // Settings are camelCase; a problem that begins with an upper-case name names a variable.
    const place: ProblemPlace = { message, path: setting !== undefined && /^[a-z]/.test(setting) ? setting : null, variable: null, file: null, line: null }
    if (setting === undefined) return place
    // A file of one entry a line (ADMIN_TOKENS_FILE), whose problems say their line themselves.
    const lineFile = Object.hasOwn(lineFiles, setting) ? lineFiles[setting] : undefined
    if (lineFile !== undefined) {
      const at = /^line (\d+)/.exec(message.slice(setting.length + 2))?.[1]
      return { ...place, variable: setting, file: lineFile, line: at === undefined ? null : Number(at) }
    }
    const source = sources.find((s) => s.teamsOnly === (setting === 'teams' || setting.startsWith('teams.'))) ?? sources.find((s) => !s.teamsOnly)
    const file = source === undefined ? null : parse(source)
    if (source === undefined || file === null) return place
    const required = message.startsWith(`${setting}: required`)
    // A name the setting may not hold (`teams: ".." is not a valid team name`) is at its own key.
    const name = NAME_REFUSED.exec(message.slice(setting.length + 2))?.[1]
    const at = required ? setting.slice(0, Math.max(0, setting.lastIndexOf('.'))) : name === undefined ? setting : `${setting}.${JSON.parse(name) as string}`
    const line = lineOf(file.doc, at, file.lines)
    return line === null ? place : { ...place, variable: source.variable, file: source.path, line }
  })
}

// A file variable's problem as sources.ts words it: `TEAMS_FILE (<path>): not valid YAML at
// line 4, column 5: …`, `… cannot be read (…)`, `… must be a YAML mapping`.
const UNUSABLE_FILE = /^(CONFIG_FILE|TEAMS_FILE) \((.+?)\): (?:not valid YAML at line (\d+)|not valid YAML|cannot be read|must be a YAML mapping)/

// A key of TEAMS_FILE other than teams: (teams-file.ts readTeamsFile), by the file's path and the key.
const STRAY_TEAMS_KEY = /^TEAMS_FILE \((.+?)\): (.+?): (?:not a teams setting|a team \(keys, advertisers\) outside teams:)/

// A problem of a name under a setting: the name as JSON, then why it is refused.
const NAME_REFUSED = /^("(?:[^"\\]|\\.)*") is not a valid /

/**
 * `places` as a reader of the files meets them: those of no line first, as they came, then
 * each file's (in the order of `places`' first mention of it) by line. Validation lists a
 * nested setting's problem after the top level's, whatever their lines.
 */
export function inFileOrder(places: readonly ProblemPlace[]): ProblemPlace[] {
  const files = [...new Set(places.flatMap((p) => (p.file === null ? [] : [p.file])))]
  const rank = (p: ProblemPlace) => (p.line === null || p.file === null ? [-1, 0] : [files.indexOf(p.file), p.line])
  return [...places].sort((a, b) => {
    const [fa, la] = rank(a) as [number, number]
    const [fb, lb] = rank(b) as [number, number]
    return fa - fb || la - lb
  })
}

/** A problem as a message says it: followed, where it has one, by its line, `; line 7 of TEAMS_FILE (teams.yaml)`. */
export function locatedText(place: ProblemPlace): string {
  const saysIt = place.message.startsWith(`${place.variable ?? ''}: line ${place.line}`) || place.message.startsWith(`${place.variable ?? ''} (${place.file ?? ''}): `)
  return place.line === null || saysIt ? place.message : `${place.message}; line ${place.line} of ${place.variable ?? ''} (${place.file ?? ''})`
}

function parseSource(source: YamlSource, readFile: (path: string) => string): { doc: Document; lines: LineCounter } | null {
  try {
    const lines = new LineCounter()
    const doc = parseDocument(readFile(source.path), { lineCounter: lines })
    return doc.errors.length > 0 ? null : { doc, lines }
  } catch {
    return null
  }
}

/** The line of the top-level key `key` in `doc` (a key that may hold dots); null when the file has none. */
function topKeyLine(doc: Document, key: string, lines: LineCounter): number | null {
  if (!isMap(doc.contents)) return null
  const pair = doc.contents.items.find((p) => isScalar(p.key) && p.key.range != null && String(p.key.value) === key)
  const start = pair !== undefined && isScalar(pair.key) ? pair.key.range?.[0] : undefined
  return start === undefined ? null : lines.linePos(start).line
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
