import { randomBytes, randomUUID } from 'node:crypto'

// The gateway's own platform calls carry an x-request-id of their own kind, so that the
// platform's logs (and the gateway's tests) tell them from callers': campaign ownership
// lookups, token probes, report jobs' runs (`job-<job id>`, as the job's log lines name it)
// and refreshes ahead of a copy's end. A caller's id in one of these spaces is replaced
// (http/hooks/request-log.ts): a caller could otherwise pass its calls off as the gateway's
// own, in the platform's logs and in the gateway's lines that name a call's id.
const OWN_KINDS = ['ownership', 'token-probe', 'job', 'refresh-ahead'] as const

export type OwnRequestKind = (typeof OWN_KINDS)[number]

const OWN_SPACE = new RegExp(`^(?:${OWN_KINDS.join('|')})-`, 'i')

/** The x-request-id of one of the gateway's own calls: its kind, then `of` (what it is for), else a new random id. */
export function ownRequestId(kind: OwnRequestKind, of: string = randomUUID()): string {
  return `${kind}-${of}`
}

/** Whether an id lies in the space of the gateway's own calls (case aside). */
export function isOwnRequestId(id: string): boolean {
  return OWN_SPACE.test(id)
}

// A caller's request without an id of its own gets a random one of the UUID form (RFC 9562,
// version 4: 122 random bits). Random for each request, not a count: a count (a prefix per
// process and a counter) told each team, from two of its own ids, how many requests every
// other team made on the replica in between, hits included. The random bytes are drawn for
// 4,096 ids at a time, their version and variant bits set then (as randomUUID() does), so
// that an id costs five slices of their hex, not randomUUID()'s formatting of each (a
// tenth of what a cache hit does beyond a bare server's work). Each slice is shorter than
// V8's sliced strings (13 characters): a copy, so an id kept holds none of the draw.
const IDS_PER_DRAW = 4096
const BYTES_PER_ID = 16
const HEX_PER_ID = 32
let drawn = ''
let next = IDS_PER_DRAW

/** The hex of random bytes for IDS_PER_DRAW ids, each one's version (4) and variant (10) bits set. */
function draw(): string {
  const bytes = randomBytes(IDS_PER_DRAW * BYTES_PER_ID)
  for (let at = 0; at < bytes.length; at += BYTES_PER_ID) {
    bytes[at + 6] = ((bytes[at + 6] as number) & 0x0f) | 0x40
    bytes[at + 8] = ((bytes[at + 8] as number) & 0x3f) | 0x80
  }
  return bytes.toString('hex')
}

/** A new id for a caller's request. */
export function newRequestId(): string {
  if (next === IDS_PER_DRAW) {
    drawn = draw()
    next = 0
  }
  const at = HEX_PER_ID * next++
  return `${drawn.slice(at, at + 8)}-${drawn.slice(at + 8, at + 12)}-${drawn.slice(at + 12, at + 16)}-${drawn.slice(at + 16, at + 20)}-${drawn.slice(at + 20, at + 32)}`
}
