import { randomInt, timingSafeEqual } from 'node:crypto'
import { ownBytes } from './own-bytes.js'
import { finished, type Pieces } from '../pieces.js'

// Whether a text holds a secret, found without a comparison that stops at the first
// character that differs (a search such as `includes` or a RegExp takes longer the more of
// the secret a guess gets right, and so tells a caller that measures it how close it is).
// Each window of the text as long as a secret is hashed with a rolling polynomial hash whose
// base is drawn at random once a process: its value says nothing to a caller, who cannot
// know which windows share a secret's hash; a window whose hash is a secret's is compared
// with it in constant time (timingSafeEqual). A hash is modulo 2^32, held as a signed
// 32-bit integer: V8 keeps one in a register and a Set looks it up as a small integer,
// where an unsigned one past 2^31 is a heap number (a MiB searched in a third of the
// time). The work is the text's length once for each length of secret, whatever the text
// holds.

/** The secrets of one length: their hashes, and their code units to compare a window whose hash is one of them. */
interface OfLength {
  length: number
  /** base^(length - 1): the weight of the character a window leaves behind. */
  lead: number
  /** The secrets' hashes, looked up in one step a window however many tokens were replaced. */
  known: Set<number>
  hashes: number[]
  units: Buffer[]
}

/** The UTF-16 code units of `text`, as timingSafeEqual compares them. */
const unitsOf = (text: string): Buffer => Buffer.from(text, 'utf16le')

/** The secrets added, found in a text by a hashed comparison; never removed (a token replaced may still be valid). */
export class SecretSearch {
  // Odd, so that multiplying by it loses no bit modulo 2^32.
  readonly #base = randomInt(1, 2 ** 31) * 2 + 1
  readonly #lengths: OfLength[] = []
  readonly #values = new Set<string>()
  /** The longest secret's length. */
  #longest = 0
  /** Whether a secret holds a space, which a `+` decodes to. */
  #spaced = false

  add(value: string): void {
    if (value.length === 0 || this.#values.has(value)) return
    this.#values.add(value)
    this.#longest = Math.max(this.#longest, value.length)
    this.#spaced ||= value.includes(' ')
    let group = this.#lengths.find((g) => g.length === value.length)
    if (group === undefined) {
      let lead = 1
      for (let i = 1; i < value.length; i++) lead = Math.imul(lead, this.#base)
      group = { length: value.length, lead, known: new Set(), hashes: [], units: [] }
      this.#lengths.push(group)
    }
    const hash = this.#hash(value, 0, value.length)
    group.known.add(hash)
    group.hashes.push(hash)
    // Kept for the process's life: in memory of its own, not a view holding a slab of
    // Buffer's shared pool alive (ownBytes).
    group.units.push(ownBytes(unitsOf(value)))
  }

  /**
   * Whether `text` holds one of the secrets, as a substring; `from`, `to`: only a window that
   * starts in [from, to) (the whole of it in `text`, past `to` if it must be).
   */
  in(text: string, from = 0, to = text.length): boolean {
    const base = this.#base
    for (const group of this.#lengths) {
      const { length, lead, known, hashes } = group
      const last = Math.min(to, text.length - length + 1) - 1
      if (last < from) continue
      const only = hashes.length === 1 ? hashes[0] : undefined
      let hash = this.#hash(text, from, length)
      for (let start = from; ; start++) {
        if ((only === undefined ? known.has(hash) : hash === only) && this.#confirmed(group, text, start, hash)) return true
        if (start === last) break
        hash = (Math.imul((hash - Math.imul(text.charCodeAt(start), lead)) | 0, base) + text.charCodeAt(start + length)) | 0
      }
    }
    return false
  }

  /**
   * `in` in pieces: the windows of `text` `piece` at a time, yielding between two pieces
   * (a caller runs the next piece when its turn comes); returns whether one holds a secret.
   */
  *inPieces(text: string, piece: number): Pieces<boolean> {
    for (let from = 0; from < text.length; from += piece) {
      if (from > 0) yield
      if (this.in(text, from, from + piece)) return true
    }
    return false
  }

  /** Whether `percentDecoded(text)` holds one of the secrets (inDecodedPieces, at once; a text decoding does not change, without a generator). */
  inDecoded(text: string): boolean {
    if (!text.includes('%') && !(this.#spaced && text.includes('+'))) return false
    return finished(this.inDecodedPieces(text, Infinity))
  }

  /**
   * Whether `percentDecoded(text)` holds one of the secrets, searched only around what
   * decoding changes: a run of escapes, and a `+` when a secret holds a space (a window
   * holding a `+` decoded to a space is no other secret). A window of the decoded text
   * that spans no change is one of `text` as it is, which `in` searches. One that spans a
   * change holds fewer than `#longest` characters kept as they were on each side of it and
   * between two changes (a run decoded to nothing, a byte-order mark, still splits the
   * window): it lies within a cluster of changes less than `#longest` characters apart,
   * widened by `#longest - 1` characters on each side. Each cluster is decoded alone,
   * its runs whole, and searched. In pieces: a cluster's decoded text is searched `piece`
   * windows at a time, and a yield comes after the clusters of each `piece` characters of
   * `text` (a character lies in two widened clusters at most).
   */
  *inDecodedPieces(text: string, piece: number): Pieces<boolean> {
    const reach = this.#longest
    if (reach === 0) return false
    let from = -1
    let to = -1
    // Where the text searched since the last yield begins.
    let since = 0
    for (const change of text.matchAll(this.#spaced ? SPACE_OR_ESCAPES : ESCAPE_RUN)) {
      if (from !== -1 && change.index - to < reach) {
        to = change.index + change[0].length
        continue
      }
      if (from !== -1) {
        if (yield* this.#around(text, from, to, piece)) return true
        if (to - since >= piece) {
          yield
          since = to
        }
      }
      from = change.index
      to = from + change[0].length
    }
    return from !== -1 && (yield* this.#around(text, from, to, piece))
  }

  /** Whether the cluster of changes of `text` from `from` to `to`, widened by `#longest - 1` on each side and decoded, holds a secret. */
  *#around(text: string, from: number, to: number, piece: number): Pieces<boolean> {
    const reach = this.#longest
    return yield* this.inPieces(percentDecoded(text.slice(Math.max(0, from - reach + 1), to + reach - 1)), piece)
  }

  /** Whether the window of `text` at `start`, whose hash is `hash`, is a secret of `group`: compared in constant time. */
  #confirmed(group: OfLength, text: string, start: number, hash: number): boolean {
    const window = unitsOf(text.slice(start, start + group.length))
    let found = false
    for (let i = 0; i < group.hashes.length; i++) if (group.hashes[i] === hash && timingSafeEqual(window, group.units[i] as Buffer)) found = true
    return found
  }

  /** The hash of the `length` characters of `text` from `from`. */
  #hash(text: string, from: number, length: number): number {
    let hash = 0
    for (let i = from; i < from + length; i++) hash = (Math.imul(hash, this.#base) + text.charCodeAt(i)) | 0
    return hash
  }
}

// A run of percent-escapes, decoded together (a character of several UTF-8 bytes).
const ESCAPE_RUN = /(?:%[0-9A-Fa-f]{2})+/g
// What decoding changes: a run of escapes, or a `+`.
const SPACE_OR_ESCAPES = /(?:%[0-9A-Fa-f]{2})+|\+/g
const lenientUtf8 = new TextDecoder('utf-8')

/** `text` as a query or form is read: `+` a space, each run of escapes as UTF-8 (bytes that are none as U+FFFD). */
export function percentDecoded(text: string): string {
  return (text.includes('+') ? text.replace(/\+/g, ' ') : text).replace(ESCAPE_RUN, (run) => lenientUtf8.decode(escapedBytes(run)))
}

// The value of each hex digit by its character code (ESCAPE_RUN matched it a hex digit).
const HEX_VALUE = Uint8Array.from({ length: 128 }, (_, c) => (/[0-9A-Fa-f]/.test(String.fromCharCode(c)) ? parseInt(String.fromCharCode(c), 16) : 0))

/** The bytes a run of escapes (`%C3%A9`, as ESCAPE_RUN matches one) writes, read from its digits where they are (no copy of the run without its `%`, no hex string). */
export function escapedBytes(run: string): Uint8Array {
  const bytes = new Uint8Array(run.length / 3)
  for (let i = 0, at = 1; i < bytes.length; i++, at += 3) bytes[i] = ((HEX_VALUE[run.charCodeAt(at)] as number) << 4) | (HEX_VALUE[run.charCodeAt(at + 1)] as number)
  return bytes
}

// What separates the words of a query, a form, a JSON text or a header: a secret known by
// its digest alone is looked for as one whole word.
const WORD_SEPARATOR = /[\s&=,;:"'()<>[\]{}]/
const WORD_SEPARATORS = /[\s&=,;:"'()<>[\]{}]+/
// WORD_SEPARATOR of each Latin-1 character, read from a table (a body passed on as it comes is read so).
const LATIN1_SEPARATORS = Uint8Array.from({ length: 256 }, (_, c) => (WORD_SEPARATOR.test(String.fromCharCode(c)) ? 1 : 0))
const isSeparator = (unit: number): boolean => (unit < 256 ? LATIN1_SEPARATORS[unit] === 1 : WORD_SEPARATOR.test(String.fromCharCode(unit)))
const PERCENT = 0x25
const PLUS = 0x2b

/**
 * The words of `text` and of its decoded form (percentDecoded) at least `minLength` long,
 * in one pass over `text` (a word found twice is yielded twice: remembering each costs more
 * than a digest of it). Decoding changes only a `+` and a run of escapes, which hold no
 * separator, and keeps every separator as it is: the words of the decoded text are those of
 * each word of `text` decoded alone. A decoded word is no longer than the word it comes
 * from (an escape of three characters is at most one), so only a word of at least
 * `minLength` holding a `%` or a `+` is decoded, and the text never is whole.
 */
export function* wordsOf(text: string, minLength: number): Generator<string> {
  let start = 0
  let changed = false
  for (let end = 0; end <= text.length; end++) {
    const unit = end < text.length ? text.charCodeAt(end) : -1
    if (unit !== -1 && !isSeparator(unit)) {
      changed ||= unit === PERCENT || unit === PLUS
      continue
    }
    if (end - start >= minLength) {
      const word = text.slice(start, end)
      yield word
      if (changed) for (const part of percentDecoded(word).split(WORD_SEPARATORS)) if (part.length >= minLength && part !== word) yield part
    }
    start = end + 1
    changed = false
  }
}
