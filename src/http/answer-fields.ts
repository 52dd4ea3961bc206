import type { FastifyReply } from 'fastify'
import { POLICY_HEADER, STATE_HEADER } from '../access/rate-limit-headers.js'

/**
 * What every proxy answer carries, whichever entrance writes it (the router's hooks, the
 * fast path of hits, a head rendered ahead): the request id and, for a team with a rate
 * limit, its standing. These functions are the only writers of those fields, so the
 * entrances cannot drift apart.
 */
export interface AnswerFields {
  reqId: string
  rate: [policy: string, state: string] | null
}

/** Appends the fields to a writeHead list of names and values. */
export function pushAnswerFields(out: string[], own: AnswerFields): void {
  out.push('x-request-id', own.reqId)
  if (own.rate) out.push(POLICY_HEADER, own.rate[0], STATE_HEADER, own.rate[1])
}

/**
 * The fields as lines of a head rendered ahead. Written without writeHead's checks: the
 * request id is a checked token (hooks/request-log.ts requestIdOf), the rest the
 * gateway's own numbers and the team's policy.
 */
export function answerFieldLines(own: AnswerFields): string {
  const id = `x-request-id: ${own.reqId}\r\n`
  return own.rate ? `${id}${POLICY_HEADER}: ${own.rate[0]}\r\n${STATE_HEADER}: ${own.rate[1]}\r\n` : id
}

/** Sets the fields on an answer the router writes. */
export function setAnswerFields(reply: FastifyReply, own: AnswerFields): void {
  reply.header('x-request-id', own.reqId)
  if (own.rate) reply.header(POLICY_HEADER, own.rate[0]).header(STATE_HEADER, own.rate[1])
}
