// The entries of jobs.webhookHosts the gateway starts with, as one regular expression for the
// chart's values.schema.json (helm checks it with Go's RE2: no look-around, no back-reference).
// The gateway takes an entry that a URL writes as it is written, in any case (config/normalize.ts,
// hostAsWritten); the URL parser (WHATWG) writes:
// - a name whose last label is a number (all digits, or 0x and hex digits) as an IPv4 address:
//   four decimal numbers of 0-255, no leading zero, no trailing dot (127.1, 010.0.0.1 and a.123
//   are written otherwise or not at all);
// - any other DNS name as it is (lower case);
// - an IPv6 address with no leading zero in a piece, an IPv4 tail written as two hex pieces, and
//   the first longest run of two or more zero pieces written ::.
// test/unit/helm-chart.test.ts holds the pattern to the gateway's loader.

const LABEL = '[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?'
/**
 * The rest of a label from its first character that is no digit: that character one of
 * `letters` or a hyphen, and no hyphen last (a `-` alone is no rest).
 */
const rest = (letters) => `([${letters}]|[${letters}-][A-Za-z0-9_-]*[A-Za-z0-9_])`
/**
 * A last label that is no number: starting with no digit; or digits then a character that is
 * none, but 0x then hex digits only (the parser's hex number).
 */
const LAST_LABEL = [
  `[A-Za-z_]([A-Za-z0-9_-]*[A-Za-z0-9_])?`,
  `[1-9][0-9]*${rest('A-Za-z_')}`,
  `0[0-9]+${rest('A-Za-z_')}`,
  `0${rest('A-WYZa-wyz_')}`,
  `0[xX][0-9A-Fa-f]*${rest('G-Zg-z_')}`,
].join('|')
const DOMAIN = `(${LABEL}\\.)*(${LAST_LABEL})\\.?`

const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'
const IPV4 = `${OCTET}(\\.${OCTET}){3}`

const PIECE = '[1-9A-Fa-f][0-9A-Fa-f]{0,3}'

/** How a URL writes the eight pieces whose zeros `mask` marks: N a piece that is not 0. */
function ipv6Tokens(mask) {
  const zero = Array.from({ length: 8 }, (_, i) => ((mask >> i) & 1) === 1)
  let run = null
  for (let i = 0; i < 8; ) {
    let j = i
    while (j < 8 && zero[j]) j++
    if (j - i >= 2 && (run === null || j - i > run[1] - run[0])) run = [i, j]
    i = Math.max(j, i + 1)
  }
  const written = (from, to) => Array.from({ length: to - from }, (_, k) => (zero[from + k] ? '0' : 'N')).flatMap((t, k) => (k === 0 ? [t] : [':', t]))
  return run === null ? written(0, 8) : [...written(0, run[0]), '::', ...written(run[1], 8)]
}

/**
 * The 256 writings as one expression: their tree of tokens, each node written once per
 * distinct rest (a 0 and an N followed alike are one alternative).
 */
function ipv6Pattern() {
  const root = new Map()
  for (let mask = 0; mask < 256; mask++) {
    let node = root
    for (const token of [...ipv6Tokens(mask), '$']) {
      if (!node.has(token)) node.set(token, new Map())
      node = node.get(token)
    }
  }
  const write = (node) => {
    const byRest = new Map()
    let ends = false
    for (const [token, child] of node) {
      if (token === '$') {
        ends = true
        continue
      }
      const after = write(child)
      byRest.set(after, [...(byRest.get(after) ?? []), token === 'N' ? PIECE : token])
    }
    const alternatives = [...byRest].map(([after, tokens]) => (tokens.length > 1 ? `(${tokens.join('|')})` : tokens[0]) + after)
    if (alternatives.length === 0) return ''
    const one = alternatives.length > 1 ? `(${alternatives.join('|')})` : alternatives[0]
    return ends ? (alternatives.length > 1 ? `${one}?` : `(${one})?`) : one
  }
  return write(root)
}

export const WEBHOOK_HOST_PATTERN = `^(${DOMAIN}|${IPV4}|\\[(${ipv6Pattern()})\\])$`
