// What a log line holds of characters that end a line or start an escape sequence to
// some reader. JSON leaves C1 controls (U+0080 to U+009F) and the Unicode line and
// paragraph separators (U+2028, U+2029) raw in a string, and a caller's text brings them
// (a header's obs-text bytes read as Latin-1, a string of its JSON body): NEL (U+0085),
// U+2028 and U+2029 end a line to a reader that splits lines the Unicode way (Python's
// str.splitlines()), so the rest of the caller's text reads as a line of its own; CSI
// (U+009B) starts an escape sequence to a terminal that honours C1 controls. Each is
// written as its JSON escape: the value a parser reads back is the same.

const LINE_BREAKERS = /[\u0080-\u009f\u2028\u2029]/g

/** `line` (a JSON text) with each C1 control, U+2028 and U+2029 written as its `\uXXXX` escape. */
export function escapedLineBreakers(line: string): string {
  return line.replace(LINE_BREAKERS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)
}
