import { randomUUID } from 'node:crypto'

// The gateway's own platform calls carry an x-request-id of their own kind, so that the
// platform's logs (and the gateway's tests) tell them from callers'. A caller's id in
// one of these spaces is replaced (routes/request-log.ts): a caller could otherwise pass
// its calls off as the gateway's own (issue 16, item 7).
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
