import { hash, timingSafeEqual } from 'node:crypto'
import type { AdminRole, AdminToken } from '../config.js'
import { wordsOf } from '../observe/secret-search.js'

// The shortest admin token the configuration accepts (ADMIN_TOKEN's bound): shorter words are none.
const MIN_ADMIN_TOKEN_CHARS = 16
// What a token presented as `authorization: Bearer <token>` can hold (http/admin/admin-access.ts
// reads `\S+`): a character of a request head, which Node reads a byte a character and in
// which it refuses a control character and DEL (400), less a space. A word holding any
// other character is no token that can be presented, and is not hashed.
const PRESENTABLE = /^[\x21-\x7e\x80-\x9f\xa1-\xff]+$/
// The distinct words of a text remembered, each hashed once: a form or a multipart body
// repeats its long words (names, headers of its parts), and a text of distinct words, of
// which remembering saves nothing, keeps the memory at this size (remembering every word
// cost more than hashing it).
const REMEMBERED = 256
// The log's texts whose verdict is remembered (heldInLogged): an access line's path (without
// its query) and user-agent repeat from line to line, and a browser's user-agent holds five
// words to hash. Texts longer than LOGGED_REMEMBERED_CHARS are searched each time; a full
// memory is emptied (a caller writing distinct texts costs the search alone, as without it).
const LOGGED_REMEMBERED = 1024
const LOGGED_REMEMBERED_CHARS = 512

/** Who an admin token belongs to, and what it may do. */
export interface AdminActor {
  name: string
  role: AdminRole
}

/**
 * Which operator an admin bearer token belongs to (ADMIN_TOKEN is "admin",
 * ADMIN_VIEWER_TOKEN "viewer", the others are named in ADMIN_TOKENS_FILE) and its role,
 * so that audit lines name people rather than fingerprints and a viewer changes nothing.
 * Only digests are held; `replace` swaps them on a reload.
 */
export class AdminAuth {
  #tokens: (AdminActor & { digest: Buffer })[] = []
  /** The tokens' digests in hex, as `hash` writes a word's. */
  #digests = new Set<string>()
  /** Those of tokens known by their digests alone: every one but the `plain` tokens given with them (heldInUnsearched). */
  #digestsOnly = new Set<string>()
  #replaced = 0
  #logged = new Map<string, boolean>()

  /** `plain`: the tokens among `tokens` given in the clear too (ADMIN_TOKEN, ADMIN_VIEWER_TOKEN), as replace takes them. */
  constructor(tokens: AdminToken[], plain: readonly (string | null)[] = []) {
    this.replace(tokens, plain)
  }

  /** How many times the tokens were replaced (at each teams reload applied): a text searched (heldIn) before a replace may hold one of the new tokens. */
  get replaced(): number {
    return this.#replaced
  }

  /**
   * The tokens from now on; `plain`: those of them the gateway holds in the clear too
   * (ADMIN_TOKEN, ADMIN_VIEWER_TOKEN; null for one not set), which the search of its secrets
   * finds (heldInUnsearched leaves them to it).
   */
  replace(tokens: AdminToken[], plain: readonly (string | null)[] = []): void {
    this.#replaced++
    this.#tokens = tokens.map((t) => ({ name: t.name, role: t.role, digest: Buffer.from(t.hash.slice('sha256:'.length), 'hex') }))
    this.#digests = new Set(tokens.map((t) => t.hash.slice('sha256:'.length)))
    const inClear = new Set(plain.flatMap((token) => (token === null ? [] : [hash('sha256', token)])))
    this.#digestsOnly = new Set([...this.#digests].filter((digest) => !inClear.has(digest)))
    this.#logged.clear()
  }

  get enabled(): boolean {
    return this.#tokens.length > 0
  }

  /**
   * Whether `text` (what a caller would have sent the platform) holds an admin token as a
   * word, as it is or percent-encoded: the named tokens of ADMIN_TOKENS_FILE are known by
   * their digests alone, so each word that could be presented as a token is hashed (once,
   * among the first REMEMBERED) and its digest looked up among the tokens'. The lookup's
   * time depends on the digest of the caller's own word alone, which tells nothing of a
   * token (verify, which says whose a presented token is, compares every digest in
   * constant time).
   */
  heldIn(text: string): boolean {
    return heldAmong(this.#digests, text)
  }

  /**
   * heldIn for the tokens known by their digests alone (the named ones of ADMIN_TOKENS_FILE):
   * what a search that finds the `plain` tokens given to replace (the gateway's secrets,
   * observe/logger.ts SecretSet.holds: each as a substring of the text or of its decoded
   * form, where heldIn finds one as a word of either) asks beside it. Without such tokens
   * it reads nothing of the text: a MiB's words are not hashed for ADMIN_TOKEN alone.
   */
  heldInUnsearched(text: string): boolean {
    return heldAmong(this.#digestsOnly, text)
  }

  /**
   * heldIn for a text a log line writes, its verdict remembered until the tokens are replaced.
   * Asked only as a line is written, after its answer: how soon tells no caller whether
   * another caller wrote the same text (admission asks heldIn, which remembers nothing).
   */
  heldInLogged(text: string): boolean {
    if (this.#digests.size === 0) return false
    if (text.length > LOGGED_REMEMBERED_CHARS) return this.heldIn(text)
    let held = this.#logged.get(text)
    if (held === undefined) {
      held = this.heldIn(text)
      if (this.#logged.size >= LOGGED_REMEMBERED) this.#logged.clear()
      this.#logged.set(text, held)
    }
    return held
  }

  /** The token's holder and role (the first that matches), or null. Every digest is compared, in constant time each. */
  verify(token: string): AdminActor | null {
    const offered = hash('sha256', token, 'buffer')
    let actor: AdminActor | null = null
    for (const t of this.#tokens) if (timingSafeEqual(offered, t.digest) && actor === null) actor = { name: t.name, role: t.role }
    return actor
  }
}

/** Whether `text` holds, as a word of its own or of its decoded form, a token whose digest is one of `digests` (AdminAuth.heldIn). */
function heldAmong(digests: ReadonlySet<string>, text: string): boolean {
  if (digests.size === 0) return false
  const seen = new Set<string>()
  const held = (word: string): boolean => {
    if (word.length < MIN_ADMIN_TOKEN_CHARS || seen.has(word) || !PRESENTABLE.test(word)) return false
    if (seen.size < REMEMBERED) seen.add(word)
    return digests.has(hash('sha256', word))
  }
  for (const word of wordsOf(text, MIN_ADMIN_TOKEN_CHARS)) {
    if (held(word)) return true
    // A path's segments are words of their own (`/api/v1/x/<token>`); a token may hold a
    // `/` itself (base64), so the word is looked for whole too.
    if (word.includes('/') && word.split('/').some(held)) return true
  }
  return false
}
