import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { Logger } from 'pino'
import { isRead } from '../access/team-auth.js'
import { requestIdOf } from './hooks/request-log.js'

/** The team whose key a request's headers present, while it runs (null for none, an unknown or an expired one). */
export type KeyTeam = (headers: IncomingHttpHeaders) => string | null

/**
 * An answer Node holds behind another on its connection (HTTP/1.1 pipelining: answers go
 * out in their requests' order, RFC 9112, 9.3.2) is made when its request is read, and
 * written out when its turn comes, which may be long after (the answer before it waited
 * for the platform). A key that ran when its request was read and no longer runs for that
 * team at its turn (a reload removed it or gave it to another team, it expired meanwhile)
 * is sent nothing of it (team-auth.ts `current` refuses such a call under way): the connection
 * closes there, before the answer's first byte, as a new call with the key is refused. A
 * write's answer is sent: the write was made while its key ran, and its caller is never
 * left to think it was not. Node tells the turn by giving the answer its connection (`socket`), before it writes a
 * byte the answer holds.
 *
 * The answer's access line was written when the answer was made, with its status; `log`
 * gets one more line under the same `reqId` saying that answer was not sent, so that an
 * operator reading the 200 learns its caller never got it.
 */
export function withholdFromRemovedKeys(req: IncomingMessage, res: ServerResponse, teamOf: KeyTeam, log: Logger): void {
  // An answer with its connection already is not held behind another: nothing to watch (most answers).
  if (res.socket !== null) return
  const path = (req.url ?? '').split('?')[0] as string
  if (!isRead(req.method ?? '', path)) return
  const team = teamOf(req.headers)
  if (team === null) return
  res.once('socket', (socket: Socket) => {
    if (teamOf(req.headers) === team) return
    socket.destroy()
    log.info({ reqId: requestIdOf(req), team, method: req.method, path, status: res.statusCode }, 'pipelined answer not sent: its key no longer runs for its team')
  })
}

/**
 * How many answers of one connection are made ahead of their turn at most (HTTP/1.1
 * pipelining), and of all connections together. Node emits every request of a read at
 * once, and an answer made ahead is held whole until its turn, outside every budget (a
 * report copy read from Redis is a buffer of its own): one team's 35 connections, each 700
 * GETs of cached 190 KB reports in one write behind a slow call, took a replica from 141 MB
 * to 567 MB, past the chart's 512 MiB, and with 8 a connection, 800 connections each 30 GETs
 * that never read took it to 553 MB (black-box passes, session 134). A request past them is
 * handled at its turn, when the answers before it have gone, as nginx handles a
 * connection's requests one at a time: only a caller that pipelines waits so.
 */
export const ANSWERS_AHEAD = 8
export const ANSWERS_AHEAD_IN_ALL = 64

const ahead = new WeakMap<Socket, number>()
let aheadInAll = 0

/**
 * Runs `handle` for a request now, or, when ANSWERS_AHEAD answers of its connection (or
 * ANSWERS_AHEAD_IN_ALL of every connection) are already made and wait for their turn, once
 * its own turn comes (Node gives its answer the connection). A request whose connection
 * closes before its turn is never handled: its caller is gone, and nothing was done for
 * it. A request with a body is handled now: its body is read as it comes (within the
 * answers' budget, access/body-room.ts), and one left unread would keep Node's parser
 * waiting for it until `server.requestTimeout`, 408 though it came whole.
 */
export function atItsTurn(req: IncomingMessage, res: ServerResponse, handle: () => void, hasBody: boolean): void {
  if (res.socket !== null || hasBody) return handle()
  const socket = req.socket
  const made = ahead.get(socket) ?? 0
  if (made >= ANSWERS_AHEAD || aheadInAll >= ANSWERS_AHEAD_IN_ALL) {
    res.once('socket', handle)
    return
  }
  if (!ahead.has(socket)) {
    // Its connection gone: its answers made ahead wait for no turn any more.
    socket.once('close', () => {
      aheadInAll -= ahead.get(socket) ?? 0
      ahead.set(socket, 0)
    })
  }
  ahead.set(socket, made + 1)
  aheadInAll += 1
  res.once('socket', () => {
    const left = ahead.get(socket) ?? 0
    if (left === 0) return
    ahead.set(socket, left - 1)
    aheadInAll -= 1
  })
  handle()
}
