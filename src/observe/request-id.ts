import { randomBytes, randomUUID } from 'node:crypto'

// The gateway's own platform calls carry an x-request-id of their own kind, so that the
// platform's logs (and the gateway's tests) tell them from callers'. A caller's id in
// one of these spaces is replaced (http/hooks/request-log.ts): a caller could otherwise pass
// its calls off as the gateway's own.
const OWN_KINDS = ['ownership', 'token-probe'] as const

export type OwnRequestKind = (typeof OWN_KINDS)[number]

const OWN_SPACE = new RegExp(`^(?:${OWN_KINDS.join('|')})-`, 'i')

/** A new x-request-id for one of the gateway's own calls. */
export function ownRequestId(kind: OwnRequestKind): string {
  return `${kind}-${randomUUID()}`
}

/** Whether an id lies in the space of the gateway's own calls (case aside). */
export function isOwnRequestId(id: string): boolean {
  return OWN_SPACE.test(id)
}

// A caller's request without an id of its own gets a random one of the UUID form (RFC 9562,
// version 4: 122 random bits). Random for each request, not a count: a count (a prefix per
// process and a counter) told each team, from two of its own ids, how many requests every
// other team made on the replica in between, hits included. The random bytes are drawn for
// 4,096 ids at a time, so that an id costs a few slices of a string, not randomUUID()'s
// formatting of each (a tenth of what a cache hit does beyond a bare server's work).
const IDS_PER_DRAW = 4096
const HEX_PER_ID = 32
const VARIANT = '89ab'
let drawn = ''
let next = IDS_PER_DRAW

/** A new id for a caller's request. */
export function newRequestId(): string {
  if (next === IDS_PER_DRAW) {
    drawn = randomBytes((IDS_PER_DRAW * HEX_PER_ID) / 2).toString('hex')
    next = 0
  }
  const at = HEX_PER_ID * next++
  const variant = VARIANT[Number.parseInt(drawn[at + 15] as string, 16) & 3] as string
  return `${drawn.slice(at, at + 8)}-${drawn.slice(at + 8, at + 12)}-4${drawn.slice(at + 12, at + 15)}-${variant}${drawn.slice(at + 16, at + 19)}-${drawn.slice(at + 19, at + 31)}`
}
