import { Agent, request, type IncomingHttpHeaders } from 'node:http'

// What stands in front of replicas in the restart tests: one request on a connection of
// its own, a steady open-loop load, and a round-robin balancer that learns which replicas
// are ready only by asking their /readyz every second, as a cloud load balancer's health
// check or a Service's endpoints do, and retries nothing.

/** An answer, or the failure that stood for one (status 0). */
export interface Answer {
  status: number
  headers: IncomingHttpHeaders
  /** Why there was no answer (a refused or reset connection), when status is 0. */
  error?: string
}

/**
 * One request on a connection of its own (no keep-alive on the caller's side, so no
 * caller-side race with a connection the other side is closing), 10 s at most.
 */
export function freshRequest(url: string, headers: Record<string, string> = {}, agent: Agent | false = false): Promise<Answer> {
  return new Promise((resolve) => {
    const req = request(url, { agent, headers, timeout: 10_000 }, (res) => {
      res.resume()
      res.once('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }))
      res.once('error', (err) => resolve({ status: 0, headers: res.headers, error: err.message }))
    })
    req.once('timeout', () => req.destroy(new Error('no answer within 10 s')))
    req.once('error', (err: NodeJS.ErrnoException) => resolve({ status: 0, headers: {}, error: err.code ?? err.message }))
    req.end()
  })
}

/**
 * `send()` started every 1000 / `perSecond` ms (open loop: a slow answer does not slow
 * the load), until stop(), which waits for the answers still awaited and returns them
 * all, in the order they were sent.
 */
export function openLoad<T>(perSecond: number, send: (i: number) => Promise<T>): { sent: () => number; stop: () => Promise<T[]> } {
  const pending: Promise<T>[] = []
  const timer = setInterval(() => pending.push(send(pending.length)), 1000 / perSecond)
  return {
    sent: () => pending.length,
    stop: async () => {
      clearInterval(timer)
      return Promise.all(pending)
    },
  }
}

/** A backend of the balancer: a replica's proxy listener. */
interface Backend {
  name: string
  port: number
  /** Its last readiness poll answered 200. */
  ready: boolean
  /** Every poll's outcome, in order: the status, or 0 for a connection that failed. */
  polls: number[]
  /** Kept-alive connections to it, as a balancer keeps them. */
  agent: Agent
}

/** An answer through the balancer, and the backend that gave it (null: no backend was ready). */
export interface BalancedAnswer extends Answer {
  backend: string | null
}

/**
 * A round-robin balancer without retries: each request goes to the next backend its last
 * readiness poll found ready, over a kept-alive connection; every backend's `/readyz`
 * is asked on a connection of its own every `pollMs` (1 s), and what it answered is kept.
 */
export class RoundRobinBalancer {
  readonly #backends: Backend[] = []
  /** Every backend's polls, kept after it is removed. */
  readonly #polls = new Map<string, number[]>()
  readonly #pollMs: number
  #next = 0
  #timer: NodeJS.Timeout | null = null
  #polling = false
  #rounds = 0

  constructor(pollMs = 1000) {
    this.#pollMs = pollMs
  }

  start(): void {
    this.#timer = setInterval(() => void this.#pollAll(), this.#pollMs)
  }

  /** A backend, out until its first poll finds it ready. */
  add(name: string, port: number): void {
    const polls: number[] = []
    this.#polls.set(name, polls)
    this.#backends.push({ name, port, ready: false, polls, agent: new Agent({ keepAlive: true, maxSockets: 32 }) })
  }

  /** Takes a backend out of the list (its replica has exited). */
  remove(name: string): void {
    const i = this.#backends.findIndex((b) => b.name === name)
    if (i < 0) return
    this.#backends[i]?.agent.destroy()
    this.#backends.splice(i, 1)
  }

  isReady(name: string): boolean {
    return this.#backends.find((b) => b.name === name)?.ready ?? false
  }

  /** What the polls of a backend answered, in order (0: the connection failed). */
  polls(name: string): number[] {
    return this.#polls.get(name)?.slice() ?? []
  }

  /** How many rounds of polls have ended. */
  get rounds(): number {
    return this.#rounds
  }

  send(path: string, headers: Record<string, string>): Promise<BalancedAnswer> {
    const ready = this.#backends.filter((b) => b.ready)
    if (ready.length === 0) return Promise.resolve({ status: 0, headers: {}, error: 'no backend ready', backend: null })
    const backend = ready[this.#next++ % ready.length] as Backend
    return freshRequest(`http://127.0.0.1:${backend.port}${path}`, headers, backend.agent).then((answer) => ({ ...answer, backend: backend.name }))
  }

  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer)
    for (const b of this.#backends) b.agent.destroy()
  }

  async #pollAll(): Promise<void> {
    if (this.#polling) return
    this.#polling = true
    try {
      await Promise.all(
        this.#backends.map(async (b) => {
          const { status } = await freshRequest(`http://127.0.0.1:${b.port}/readyz`)
          b.polls.push(status)
          b.ready = status === 200
        }),
      )
      this.#rounds++
    } finally {
      this.#polling = false
    }
  }
}
