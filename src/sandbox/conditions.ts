import type { Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Capacity, FailureMode, GarbledBody, Weather } from './types.js'

const NONE: FailureMode = { kind: 'none' }
const GARBLED_BODIES: GarbledBody[] = ['html', 'html-as-json', 'truncated-json', 'empty']
const MAX_LARGE_BYTES = 256 * 1024 * 1024
const WEATHER_KINDS = ['serverErrors', 'throttles', 'hangs', 'cuts'] as const
const CALM: Required<Weather> = { serverErrors: 0, throttles: 0, hangs: 0, cuts: 0 }
const SERVER_ERRORS = [500, 502, 503] as const

/**
 * The network weather of the /api/v1 routes: added latency and the injected
 * failure. It also holds the sockets of hung requests, because a hung request
 * has no reply that could ever end it: only close() does.
 */
export class Conditions {
  #latencyMs: number
  #latencyMaxMs: number
  #weather: Required<Weather> = CALM
  #failure: FailureMode = NONE
  #remaining = Infinity
  readonly #routes = new Map<string, { mode: FailureMode; remaining: number }>()
  readonly #held = new Set<Socket>()
  /** Each trickle ended: the chunks it was to send and those it sent before its end or its caller's. */
  readonly trickles: { chunks: number; sent: number }[] = []
  readonly #closing = new AbortController()
  #inFlight = 0
  #peak = 0
  #workers = Infinity
  #perDayMs = 0
  #perRowMs = 0
  #busy = 0
  readonly #queue: (() => void)[] = []
  readonly #waitingRelease: (() => void)[] = []

  constructor(latencyMs: number) {
    this.#latencyMs = checkedLatency(latencyMs)
    this.#latencyMaxMs = this.#latencyMs
  }

  /** Each answer waits `ms`, or a time drawn evenly between `ms` and `maxMs`. */
  setLatency(ms: number, maxMs = ms): void {
    const min = checkedLatency(ms)
    const max = checkedLatency(maxMs)
    if (max < min) throw new RangeError(`the longest latency (${max} ms) is shorter than the shortest (${min} ms)`)
    this.#latencyMs = min
    this.#latencyMaxMs = max
  }

  setCapacity(capacity: Capacity): void {
    const checked = parseCapacity(capacity)
    if (typeof checked === 'string') throw new TypeError(checked)
    this.#workers = checked.workers
    this.#perDayMs = checked.perDayMs
    this.#perRowMs = checked.perRowMs
    // Fewer waiting than free workers now: they go.
    while (this.#queue.length > 0 && this.#busy < this.#workers) this.#startNext()
  }

  /**
   * A worker for one call, once one is free (first come, first served); the returned
   * function gives it back (once). The call's work then takes `days` × perDayMs.
   */
  async worker(): Promise<() => void> {
    if (this.#busy >= this.#workers) await new Promise<void>((resolve) => this.#queue.push(resolve))
    else this.#busy += 1
    let done = false
    return () => {
      if (done) return
      done = true
      this.#busy -= 1
      if (this.#queue.length > 0 && this.#busy < this.#workers) this.#startNext()
    }
  }

  #startNext(): void {
    this.#busy += 1
    ;(this.#queue.shift() as () => void)()
  }

  /** How long the work of a report over `days` days takes beyond the latency. */
  workMs(days: number | null): number {
    return days === null ? 0 : days * this.#perDayMs
  }

  setWeather(weather: Weather): void {
    const checked = parseWeather(weather)
    if (typeof checked === 'string') throw new TypeError(checked)
    this.#weather = checked
  }

  setFailure(mode: FailureMode): void {
    const checked = parseFailureMode(mode)
    if (typeof checked === 'string') throw new TypeError(checked)
    this.#failure = checked
    this.#remaining = checked.kind === 'none' ? Infinity : (checked.times ?? Infinity)
  }

  setRouteFailure(path: string, mode: FailureMode): void {
    const checked = parseFailureMode(mode)
    if (typeof checked === 'string') throw new TypeError(checked)
    if (!path.startsWith('/')) throw new TypeError('"path" must start with /')
    if (checked.kind === 'none') this.#routes.delete(path)
    else this.#routes.set(path, { mode: checked, remaining: checked.times ?? Infinity })
  }

  clearRouteFailures(): void {
    this.#routes.clear()
  }

  /** The failure set for `path` alone (setRouteFailure), or none; a limited one is used up by taking it. */
  takeRouteFailure(path: string): FailureMode {
    const route = this.#routes.get(path)
    if (!route) return NONE
    route.remaining -= 1
    if (route.remaining <= 0) this.#routes.delete(path)
    return route.mode
  }

  /** The failure for the request at hand (its path's own first); a limited one is used up by taking it. */
  takeFailure(path?: string): FailureMode {
    const route = path === undefined ? NONE : this.takeRouteFailure(path)
    if (route.kind !== 'none') return route
    if (this.#failure.kind === 'none') return this.#drawWeather()
    const failure = this.#failure
    this.#remaining -= 1
    if (this.#remaining <= 0) this.setFailure(NONE)
    return failure
  }

  /** A failure drawn at the weather's rates, or none. */
  #drawWeather(): FailureMode {
    const w = this.#weather
    let r = Math.random()
    if ((r -= w.serverErrors) < 0) return { kind: 'status', status: SERVER_ERRORS[Math.floor(Math.random() * SERVER_ERRORS.length)] as number }
    if ((r -= w.throttles) < 0) return { kind: 'status', status: 429, headers: { 'retry-after': '1' } }
    if ((r -= w.hangs) < 0) return { kind: 'hang' }
    if ((r -= w.cuts) < 0) return { kind: 'cut' }
    return NONE
  }

  /** Works on the `rows` a list call answers (setCapacity's perRowMs each): the milliseconds waited out, or null when the sandbox closed meanwhile. */
  rowsWork(rows: number): Promise<number | null> {
    return this.#wait(rows * this.#perRowMs)
  }

  /** Waits the configured latency and `extraMs`: the milliseconds waited out, or null when the sandbox closed meanwhile. */
  delay(extraMs = 0): Promise<number | null> {
    return this.#wait(this.#latencyMs + Math.random() * (this.#latencyMaxMs - this.#latencyMs) + extraMs)
  }

  /** Waits `ms`: `ms`, or null when the sandbox closed meanwhile. */
  async #wait(ms: number): Promise<number | null> {
    if (ms === 0) return 0
    try {
      await sleep(ms, undefined, { signal: this.#closing.signal })
      return ms
    } catch {
      return null
    }
  }

  /** A /api/v1 request began; the returned function ends it (once). */
  enter(): () => void {
    this.#inFlight += 1
    this.#peak = Math.max(this.#peak, this.#inFlight)
    let left = false
    return () => {
      if (left) return
      left = true
      this.#inFlight -= 1
    }
  }

  /**
   * Requests being answered now, the most at once since the last resetPeak(), and those the
   * `held` failure keeps now: a request is in flight from its arrival, held only once its
   * latency is waited out, and releaseHeld() lets go only of those held.
   */
  concurrency(): { inFlight: number; peak: number; held: number } {
    return { inFlight: this.#inFlight, peak: this.#peak, held: this.#waitingRelease.length }
  }

  resetPeak(): void {
    this.#peak = this.#inFlight
  }

  /**
   * A 200 trickled out: headers now, then one chunk every `intervalMs`; the whole is valid
   * JSON. Stops early when the caller goes away or the sandbox closes.
   */
  async trickle(socket: Socket, intervalMs: number, chunks: number): Promise<void> {
    this.hold(socket)
    socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n')
    const chunk = (text: string) => socket.write(`${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`)
    chunk('{"trickle":"')
    let sent = 0
    try {
      for (; sent < chunks; sent++) {
        await sleep(intervalMs, undefined, { signal: this.#closing.signal })
        if (socket.destroyed) return
        chunk('.')
      }
      chunk('"}')
      socket.end('0\r\n\r\n')
    } catch {
      // the sandbox closes
    } finally {
      this.trickles.push({ chunks, sent })
    }
  }

  /** Resolves once releaseHeld() is called (or the sandbox closes). */
  held(): Promise<void> {
    return new Promise((resolve) => this.#waitingRelease.push(resolve))
  }

  releaseHeld(): void {
    for (const resolve of this.#waitingRelease.splice(0)) resolve()
  }

  hold(socket: Socket): void {
    this.#held.add(socket)
    socket.once('close', () => this.#held.delete(socket))
  }

  /** Ends every hung request and wakes every delayed one, so close() never waits on them. */
  shutDown(): void {
    this.#closing.abort()
    for (const resolve of this.#queue.splice(0)) resolve()
    this.releaseHeld()
    for (const socket of this.#held) socket.destroy()
    this.#held.clear()
  }
}

/** A FailureMode from untrusted JSON, or the reason it is not one. */
export function parseFailureMode(value: unknown): FailureMode | string {
  if (typeof value !== 'object' || value === null) return 'a failure mode is an object with a "kind"'
  const { kind, status, body, headers, times, intervalMs, chunks, bytes, gzip, location, answer } = value as Record<string, unknown>
  if (times !== undefined && !(Number.isInteger(times) && (times as number) > 0)) return '"times" must be a positive integer'
  const limit = times === undefined ? {} : { times: times as number }
  switch (kind) {
    case 'none':
      return NONE
    case 'hang':
    case 'reset':
    case 'cut':
    case 'held':
      return { kind, ...limit }
    case 'status':
      if (!(Number.isInteger(status) && (status as number) >= 200 && (status as number) <= 599)) return '"status" must be an HTTP status (200-599)'
      if (headers !== undefined && !isStringRecord(headers)) return '"headers" must map header names to strings'
      return { kind, status: status as number, ...(body === undefined ? {} : { body }), ...(headers === undefined ? {} : { headers }), ...limit }
    case 'redirect':
      if (typeof location !== 'string' || location === '') return '"location" must be a URL (a non-empty string)'
      if (status !== undefined && !(Number.isInteger(status) && (status as number) >= 300 && (status as number) <= 399)) return '"status" must be a redirect status (300-399)'
      if (headers !== undefined && !isStringRecord(headers)) return '"headers" must map header names to strings'
      return { kind, location, ...(status === undefined ? {} : { status: status as number }), ...(headers === undefined ? {} : { headers }), ...limit }
    case 'trickle':
      if (!(Number.isInteger(intervalMs) && (intervalMs as number) > 0)) return '"intervalMs" must be a positive integer'
      if (chunks !== undefined && !(Number.isInteger(chunks) && (chunks as number) > 0)) return '"chunks" must be a positive integer'
      return { kind, intervalMs: intervalMs as number, ...(chunks === undefined ? {} : { chunks: chunks as number }), ...limit }
    case 'large':
      if (!(Number.isInteger(bytes) && (bytes as number) > 0 && (bytes as number) <= MAX_LARGE_BYTES)) return `"bytes" must be a positive integer up to ${MAX_LARGE_BYTES}`
      return { kind, bytes: bytes as number, ...limit }
    case 'garbled':
      if (!GARBLED_BODIES.includes(body as GarbledBody)) return `"body" must be one of ${GARBLED_BODIES.join(', ')}`
      if (gzip !== undefined && typeof gzip !== 'boolean') return '"gzip" must be true or false'
      return { kind, body: body as GarbledBody, ...(gzip === undefined ? {} : { gzip }), ...limit }
    case 'raw':
      if (typeof answer !== 'string' || answer === '') return '"answer" must be the bytes of an answer (a non-empty string, one byte a character)'
      return { kind, answer, ...limit }
    default:
      return '"kind" must be one of none, status, redirect, hang, reset, trickle, large, garbled, cut, held, raw'
  }
}

/** A Capacity from untrusted JSON (absent parts: none), or the reason it is not one. */
export function parseCapacity(value: unknown): Required<Capacity> | string {
  if (typeof value !== 'object' || value === null) return 'the capacity is an object: workers, perDayMs, perRowMs'
  const { workers = Infinity, perDayMs = 0, perRowMs = 0, ...rest } = value as Capacity & Record<string, unknown>
  const unknown = Object.keys(rest)[0]
  if (unknown !== undefined) return `"${unknown}" is no part of the capacity (workers, perDayMs, perRowMs)`
  if (!(workers === Infinity || (Number.isInteger(workers) && workers > 0))) return '"workers" must be a positive integer'
  if (!(typeof perDayMs === 'number' && Number.isFinite(perDayMs) && perDayMs >= 0)) return '"perDayMs" must be a number >= 0'
  if (!(typeof perRowMs === 'number' && Number.isFinite(perRowMs) && perRowMs >= 0)) return '"perRowMs" must be a number >= 0'
  return { workers, perDayMs, perRowMs }
}

/** A Weather from untrusted JSON (every kind present), or the reason it is not one. */
export function parseWeather(value: unknown): Required<Weather> | string {
  if (typeof value !== 'object' || value === null) return 'the weather is an object of rates: ' + WEATHER_KINDS.join(', ')
  const unknown = Object.keys(value).find((k) => !(WEATHER_KINDS as readonly string[]).includes(k))
  if (unknown !== undefined) return `"${unknown}" is no kind of weather (${WEATHER_KINDS.join(', ')})`
  const w = { ...CALM, ...(value as Weather) }
  for (const kind of WEATHER_KINDS) {
    const rate = w[kind]
    if (typeof rate !== 'number' || !(rate >= 0 && rate <= 1)) return `"${kind}" must be a rate between 0 and 1`
  }
  if (WEATHER_KINDS.reduce((sum, kind) => sum + w[kind], 0) > 1) return 'the rates add up to more than 1'
  return w
}

function isStringRecord(value: unknown): value is Record<string, string> {
  return typeof value === 'object' && value !== null && Object.values(value).every((v) => typeof v === 'string')
}

function checkedLatency(ms: number): number {
  if (!(Number.isFinite(ms) && ms >= 0)) throw new RangeError(`latency must be a finite number of milliseconds >= 0, got ${ms}`)
  return ms
}
