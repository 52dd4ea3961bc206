import { mkdtempSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { LineCounter, parseDocument, isMap, isScalar, isSeq, type Node, type YAMLSeq } from 'yaml'

// The key entries of a teams file (TEAMS_FILE, CONFIG_FILE, or a Helm values file with
// `teams:` at its top) edited as text: only the entry touched changes, every other byte
// (comments, quoting, the order of the teams) stays as it was. Used by `npm run keys --
// rotate` and `remove` (cli/keys-command.ts), which validate the result before writing.

/** One key entry of the file as written: its fields as strings, where it sits. */
export interface KeyEntryText {
  /** The entry's fields as the file writes them (a bare hash is `{ hash }`). */
  fields: Record<string, string>
  /** 1-based line of the entry. */
  line: number
}

interface Located {
  seq: YAMLSeq
  item: Node
}

export class KeysFile {
  readonly path: string
  readonly text: string
  readonly #lines = new LineCounter()
  readonly #doc: ReturnType<typeof parseDocument>

  constructor(path: string, text = readFileSync(path, 'utf8')) {
    this.path = path
    this.text = text
    this.#doc = parseDocument(text, { lineCounter: this.#lines })
  }

  /** The `index`-th key entry of `team`, as written. */
  entry(team: string, index: number): KeyEntryText {
    const { item } = this.#locate(team, index)
    const value: unknown = item.toJSON()
    const fields = typeof value === 'string' ? { hash: value } : Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, String(v)]))
    return { fields, line: this.#lines.linePos((item.range as [number, number, number])[0]).line }
  }

  /** The text with the `index`-th entry of `team` replaced by the entries `entries` (one-line flow maps), in its place. */
  replaced(team: string, index: number, entries: string[]): string {
    const { seq, item } = this.#locate(team, index)
    const start = (item.range as [number, number, number])[0]
    // A block entry's range runs on over the line break after it (a mapping's, to the next line).
    const end = trimmedEnd(this.text, (item.range as [number, number, number])[1])
    if (seq.flow || entries.length <= 1) return splice(this.text, start, end, entries.join(', '))
    // A block sequence: each further entry on a line of its own, written as the first one is (`      - `).
    const lineStart = this.text.lastIndexOf('\n', start - 1) + 1
    const prefix = this.text.slice(lineStart, start)
    const lineEnd = lineEndAfter(this.text, end)
    const further = entries
      .slice(1)
      .map((e) => `\n${prefix}${e}`)
      .join('')
    return splice(splice(this.text, lineEnd, lineEnd, further), start, end, entries[0] as string)
  }

  /** The text without the `index`-th entry of `team`. */
  without(team: string, index: number): string {
    const { seq, item } = this.#locate(team, index)
    const [start, end] = item.range as [number, number, number]
    if (seq.items.length === 1) {
      // The team's last key: its list is left empty, `[]`, never a null the schema refuses.
      const [seqStart, seqEnd] = seq.range as [number, number, number]
      return splice(this.text, seqStart, seq.flow ? seqEnd : trimmedEnd(this.text, seqEnd), seq.flow ? '[]' : '[]')
    }
    if (seq.flow) {
      // The item and the comma after it (or, for the last item, the comma before it).
      const after = /^\s*,\s*/.exec(this.text.slice(end))
      if (after) return splice(this.text, start, end + after[0].length, '')
      const before = /,\s*$/.exec(this.text.slice(0, start))
      return splice(this.text, before ? start - before[0].length : start, end, '')
    }
    // A block item: its lines, from the `-` to the end of its last line.
    const lineStart = this.text.lastIndexOf('\n', start - 1) + 1
    return splice(this.text, lineStart, lineEndAfter(this.text, trimmedEnd(this.text, end)) + 1, '')
  }

  #locate(team: string, index: number): Located {
    const seq = this.#doc.getIn(['teams', team, 'keys'], true)
    if (!isSeq(seq)) throw new Error(`teams.${team}.keys is not a list`)
    const item = seq.items[index]
    if (!(isScalar(item) || isMap(item)) || !item.range) throw new Error(`teams.${team}.keys.${index} is not a key entry`)
    return { seq, item: item as Node }
  }
}

/**
 * Writes `text` over the file at `path` whole or not at all: into a new file beside the
 * file a symlink points at, then renamed over it (a replica's poll never reads half a
 * file, and a symlinked file stays a symlink). The file keeps its mode.
 */
export function writeWhole(path: string, text: string): void {
  const target = realpathSync(path)
  const dir = mkdtempSync(join(dirname(target), '.keys-'))
  const temp = join(dir, 'teams.yaml')
  try {
    writeFileSync(temp, text, { mode: statSync(target).mode })
    renameSync(temp, target)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

function splice(text: string, start: number, end: number, insert: string): string {
  return text.slice(0, start) + insert + text.slice(end)
}

/** The offset of the end of the line that holds `offset` (its `\n`, or the text's end). */
function lineEndAfter(text: string, offset: number): number {
  const at = text.indexOf('\n', offset)
  return at === -1 ? text.length : at
}

/** `end` moved back over the line breaks and spaces a node's range takes in after it. */
function trimmedEnd(text: string, end: number): number {
  let at = end
  while (at > 0 && /\s/.test(text[at - 1] as string)) at--
  return at
}
