import { createHash } from 'node:crypto'

/** The name ADMIN_TOKEN goes by in audit lines. */
export const ADMIN_TOKEN_NAME = 'admin'

/** A named admin token: its sha256 only. */
export interface AdminToken {
  name: string
  hash: string
}

const LINE = /^([A-Za-z0-9_.@-]{1,64}):(sha256:[0-9a-f]{64})$/

/**
 * The admin tokens: ADMIN_TOKEN (named "admin") and the named ones of ADMIN_TOKENS_FILE,
 * one `name:sha256:<hex>` per line (blank lines and # comments allowed), so that audit
 * lines name the operator. Only digests are kept; a bad line is named by its number,
 * never by its content, which may be a pasted token.
 */
export function adminTokens(token: string | null, file: string | null, readFile: (p: string) => string, problems: string[]): AdminToken[] {
  const tokens: AdminToken[] = token ? [{ name: ADMIN_TOKEN_NAME, hash: `sha256:${createHash('sha256').update(token, 'utf8').digest('hex')}` }] : []
  if (!file) return tokens
  let text: string
  try {
    text = readFile(file)
  } catch (err) {
    problems.push(`ADMIN_TOKENS_FILE: ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`)
    return tokens
  }
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) continue
    const match = LINE.exec(line)
    if (!match) {
      problems.push(`ADMIN_TOKENS_FILE: line ${i + 1} is not name:sha256:<64 lower-case hex digits> (make one with npm run keys -- hash TOKEN)`)
      continue
    }
    const [, name, hash] = match as unknown as [string, string, string]
    if (tokens.some((t) => t.name === name)) problems.push(`ADMIN_TOKENS_FILE: line ${i + 1}: the name ${name} is used twice`)
    else tokens.push({ name, hash })
  }
  return tokens
}
