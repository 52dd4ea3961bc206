// The client's refusals of what it does not send (CLIENT_REFUSED), and of the options it
// cannot use, checked when the client is made or a call is given one.
import { GatewayError } from './errors.js'

/** The longest timer a runtime sets (2^31 - 1 ms, 24.8 days): a longer one fires at once. */
export const MAX_TIMEOUT_MS = 2_147_483_647

/** CLIENT_REFUSED: `why` a call (or the client) is not made; nothing is sent. */
export function refusal(why: string, cause?: unknown): GatewayError {
  return new GatewayError('CLIENT_REFUSED', `not sent: ${why}`, cause === undefined ? {} : { cause })
}

/**
 * The numeric options, refused as CLIENT_REFUSED unless usable: `Number(process.env.X)` of
 * an unset variable is NaN, with which every call would time out at once (a timeout) or
 * the kept answers never be dropped (a count); so would an Infinity timeout (a timer past
 * MAX_TIMEOUT_MS fires at once).
 */
export function timeoutOption(value: number): number {
  if (typeof value !== 'number' || !(value >= 1 && value <= MAX_TIMEOUT_MS)) throw refusal(`timeoutMs: must be a number of ms from 1 to ${MAX_TIMEOUT_MS} (got ${shownOption(value)})`)
  return value
}

export function countOption(name: string, value: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) throw refusal(`${name}: must be a whole number from 0 (got ${shownOption(value)})`)
  return value
}

export function secondsOption(name: string, value: number): number {
  if (typeof value !== 'number' || !(value >= 0)) throw refusal(`${name}: must be a number of seconds from 0 (got ${shownOption(value)})`)
  return value
}

/** A numeric option's value as a refusal shows it: a number, or what else it is. */
function shownOption(value: unknown): string {
  return typeof value === 'number' ? String(value) : `a ${typeof value}`
}
