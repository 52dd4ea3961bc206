import { sha256Hex } from './secret-digest.js'
import { tokenFault, unreadable } from './sources.js'

/** The name ADMIN_TOKEN goes by in audit lines. */
export const ADMIN_TOKEN_NAME = 'admin'
/** The name ADMIN_VIEWER_TOKEN goes by in audit lines. */
export const VIEWER_TOKEN_NAME = 'viewer'

/** What an admin token may do: a viewer reads, an operator also changes (purge, token, reload, log level). */
export type AdminRole = 'viewer' | 'operator'
export const ADMIN_ROLES: readonly AdminRole[] = ['viewer', 'operator']

/** A named admin token: its sha256 only, and its role. */
export interface AdminToken {
  name: string
  hash: string
  role: AdminRole
}

// `name:sha256:<hex>`, optionally `:viewer` or `:operator` after it. A line without a
// role is an operator's: every token file written before roles keeps its power.
const NAME = '[A-Za-z0-9_.@-]{1,64}'
const LINE = new RegExp(`^(${NAME}):(sha256:[0-9a-f]{64})(?::(viewer|operator))?$`)
const NAMED = new RegExp(`^${NAME}:`)
const LINE_FORM = 'name:sha256:<64 lower-case hex digits>, then optionally :viewer or :operator'

const digest = (token: string) => `sha256:${sha256Hex(token)}`

/**
 * The admin tokens: ADMIN_TOKEN (an operator, named "admin"), ADMIN_VIEWER_TOKEN (a
 * viewer, named "viewer") and the named ones of ADMIN_TOKENS_FILE, one
 * `name:sha256:<hex>[:role]` per line (blank lines and # comments allowed), so that audit
 * lines name the operator. Only digests are kept; a bad line is named by its number,
 * never by its content, which may be a pasted token.
 */
export function adminTokens(
  given: { token: string | null; viewerToken: string | null; file: string | null },
  readFile: (p: string) => string,
  problems: string[],
): AdminToken[] {
  const tokens: AdminToken[] = []
  // The listener reads `authorization: Bearer <token>` with no space in the token: a token
  // no header carries (`Bearer <token>` pasted from a header, a space, a typographic quote)
  // would be matched for no caller, and a reload taking it would lock every operator out.
  const carried = (name: string, token: string | null): string | null => {
    const fault = token ? tokenFault(token) : null
    if (fault !== null) problems.push(`${name}: ${fault}`)
    return fault === null ? token : null
  }
  const token = carried('ADMIN_TOKEN', given.token)
  const viewerToken = carried('ADMIN_VIEWER_TOKEN', given.viewerToken)
  if (token) tokens.push({ name: ADMIN_TOKEN_NAME, hash: digest(token), role: 'operator' })
  if (viewerToken) {
    // One token, one role: the same secret in both would make the viewer an operator.
    if (viewerToken === token) problems.push('ADMIN_VIEWER_TOKEN: is ADMIN_TOKEN itself; a viewer needs a token of its own (the value is not shown)')
    else tokens.push({ name: VIEWER_TOKEN_NAME, hash: digest(viewerToken), role: 'viewer' })
  }
  const { file } = given
  if (!file) return tokens
  let text: string
  try {
    text = readFile(file)
  } catch (err) {
    problems.push(`ADMIN_TOKENS_FILE: ${file} cannot be read (${unreadable(file, err)})`)
    return tokens
  }
  for (const [number, line] of tokenLines(text)) {
    const match = LINE.exec(line)
    if (!match) {
      problems.push(`ADMIN_TOKENS_FILE: line ${number} is not ${LINE_FORM} (make the hash with npm run keys -- hash TOKEN)`)
      continue
    }
    const [, name, hash, role] = match as unknown as [string, string, string, AdminRole | undefined]
    // One token, one holder: the first of two entries of a token would give its holder that
    // entry's role and name, an operator's line before a viewer's making the viewer an operator.
    const holder = tokens.find((t) => t.hash === hash)
    if (tokens.some((t) => t.name === name)) problems.push(`ADMIN_TOKENS_FILE: line ${number}: the name ${name} is used twice`)
    else if (holder) problems.push(`ADMIN_TOKENS_FILE: line ${number}: the token of ${name} is also the token of ${holder.name}; each holder needs a token of its own (the value is not shown)`)
    else tokens.push({ name, hash, role: role ?? 'operator' })
  }
  return tokens
}

/**
 * What the lines of an ADMIN_TOKENS_FILE's `text` hold in their tokens' place, which a start
 * refusal does not repeat (observe/start-secrets.ts): each line's digest, or, on a line that
 * is not one, the line and what follows its name (a token pasted where its digest belongs).
 */
export function tokensFileSecrets(text: string): string[] {
  return tokenLines(text).flatMap(([, line]) => {
    const digest = LINE.exec(line)?.[2]
    return digest === undefined ? [line, line.replace(NAMED, '')] : [digest]
  })
}

/** The lines of an ADMIN_TOKENS_FILE's `text` that name a token, trimmed, each with its number: blank lines and # comments name none. */
function tokenLines(text: string): [number, string][] {
  return text
    .split('\n')
    .map((raw, i): [number, string] => [i + 1, raw.trim()])
    .filter(([, line]) => line !== '' && !line.startsWith('#'))
}
