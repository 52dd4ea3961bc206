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

// A caller's request without an id of its own gets one of the UUID form (RFC 9562,
// version 8): a prefix drawn at random once per process, then a counter. Unique across
// replicas (74 random bits a process) without drawing random bytes on every request:
// randomUUID() costs a tenth of what a cache hit does beyond a bare server's work. A
// request id labels log lines; it is no secret, so a guessable one costs nothing.
const ID_PREFIX = (() => {
  const hex = randomBytes(10).toString('hex')
  const variant = '89ab'[Number.parseInt(hex[18] as string, 16) & 3] as string
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(12, 15)}-${variant}${hex.slice(15, 18)}-`
})()
let issued = 0

/** A new id for a caller's request. */
export function newRequestId(): string {
  return ID_PREFIX + (issued++).toString(16).padStart(12, '0')
}
