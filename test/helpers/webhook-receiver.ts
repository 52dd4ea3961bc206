import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach } from 'vitest'

// A team's webhook receiver for the tests that stop or kill the replica pushing to it.

export interface Hit {
  id: string
  at: number
  status: number
}

export interface Receiver {
  url: string
  /** The attempts answered to a caller still there, in order. */
  hits: Hit[]
  /** The most attempts it held at once. */
  most: () => number
  /** Attempts arrived and not yet answered or gone. */
  inFlight: () => number
  /** From now on each attempt is held, unanswered, until `answer` is called. */
  hold: () => void
  /** Answers the held attempts and every later one `status`. */
  answer: (status: number) => void
}

/**
 * A receiver on 127.0.0.1 answering each POST after `holdMs`, 503 until told otherwise.
 * An attempt whose caller went away (its socket ended or closed: the process was killed)
 * is no hit: that caller never heard an answer, so no replica records it. The server is
 * pushed to `servers`, for the test to close.
 */
export async function receiver(holdMs: number, servers: Server[]): Promise<Receiver> {
  const hits: Hit[] = []
  const held = new Set<() => void>()
  let status: number | null = 503
  let inFlight = 0
  let most = 0
  const server = createServer((req, res) => {
    inFlight += 1
    most = Math.max(most, inFlight)
    let over = false
    const end = (): boolean => {
      if (over) return false
      over = true
      inFlight -= 1
      return true
    }
    res.on('close', () => end())
    const settle = (): void => {
      held.delete(settle)
      const gone = req.socket.destroyed || req.socket.readableEnded
      if (!end()) return
      if (gone) return void res.destroy()
      const answered = status as number
      hits.push({ id: String(req.headers['webhook-id']), at: Date.now(), status: answered })
      res.writeHead(answered).end()
    }
    req.resume()
    req.on('end', () => setTimeout(() => (status === null ? held.add(settle) : settle()), holdMs))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  servers.push(server)
  return {
    url: `http://localhost:${(server.address() as AddressInfo).port}/hook`,
    hits,
    most: () => most,
    inFlight: () => inFlight,
    hold: () => {
      status = null
    },
    answer: (s) => {
      status = s
      for (const settle of [...held]) settle()
    },
  }
}

/** Receivers for the tests of a file, each closed after its test. */
export function useReceivers(): (holdMs: number) => Promise<Receiver> {
  const servers: Server[] = []
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections()
      await new Promise((resolve) => s.close(resolve))
    }
  })
  return (holdMs) => receiver(holdMs, servers)
}
