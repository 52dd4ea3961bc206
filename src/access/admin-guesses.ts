import { isIP } from 'node:net'
import { LRUCache } from 'lru-cache'

// How many refused admin tokens one address sends: ADMIN_GUESSES within
// ADMIN_GUESS_WINDOW_MS of the first, then its calls without a right token are refused 429
// until that window ends. A right token still passes: operators behind one NAT or balancer
// share a guesser's address, and a lock of every token would let anyone there lock them
// out. So the lock tells a script that it is wrong and keeps a flood to one audit line; what
// keeps a guesser from a token is the token's length (decisions/admin-guess-bound.md). The
// bound stays far above what people and test suites send by mistake (the console asks 8
// calls at once with the token it is given: twelve mistypes within the minute).

/** Refused admin tokens an address may send within ADMIN_GUESS_WINDOW_MS. */
export const ADMIN_GUESSES = 100
export const ADMIN_GUESS_WINDOW_MS = 60_000
// Addresses remembered at once, the least recently refused forgotten first: a flood of
// addresses costs bounded memory, each forgotten one starting a window anew.
const ADDRESSES = 10_000
// An IPv6 host is given a /64 at least: its addresses within it are one guesser.
const IPV6_HOST_GROUPS = 4

interface Window {
  /** When the window's first refusal came. */
  since: number
  refused: number
}

/** The guesses of each address at the admin token, one replica's. */
export class AdminGuesses {
  readonly #now: () => number
  readonly #windows = new LRUCache<string, Window>({ max: ADDRESSES })

  constructor(now: () => number) {
    this.#now = now
  }

  /** Seconds until `address` may call again (at least 1); null while it may. */
  lockedFor(address: string): number | null {
    const window = this.#current(guesser(address))
    if (window === undefined || window.refused < ADMIN_GUESSES) return null
    return Math.max(1, Math.ceil((window.since + ADMIN_GUESS_WINDOW_MS - this.#now()) / 1000))
  }

  /** A token from `address` was refused. */
  refused(address: string): void {
    const key = guesser(address)
    const window = this.#current(key) ?? { since: this.#now(), refused: 0 }
    window.refused += 1
    this.#windows.set(key, window)
  }

  /** The window of `key` while it lasts. */
  #current(key: string): Window | undefined {
    const window = this.#windows.get(key)
    if (window === undefined || this.#now() - window.since < ADMIN_GUESS_WINDOW_MS) return window
    this.#windows.delete(key)
    return undefined
  }
}

/** Who guesses from `address`: an IPv4 address (an IPv4-mapped one as itself), an IPv6 address's /64. */
export function guesser(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped) return mapped[1] as string
  if (isIP(address) !== 6) return address
  return expandIpv6(address).slice(0, IPV6_HOST_GROUPS).join(':')
}

/** The eight groups of an IPv6 address, without zone, each in lower case without leading zeros. */
function expandIpv6(address: string): string[] {
  const bare = address.replace(/%.*$/, '').toLowerCase()
  const [head = '', tail] = bare.split('::')
  const groups = (part: string | undefined) => (part === undefined || part === '' ? [] : part.split(':'))
  const before = groups(head)
  const after = groups(tail)
  const middle = tail === undefined ? [] : Array<string>(8 - before.length - after.length).fill('0')
  return [...before, ...middle, ...after].map((group) => group.replace(/^0+(?=.)/, ''))
}
