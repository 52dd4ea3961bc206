import type { FastifyReply } from 'fastify'
import { POLICY_HEADER, STATE_HEADER } from '../access/rate-limit-headers.js'
import { PROVISIONAL_HEADER, SETTLED_HEADER, USAGE_HEADER, type ReportFacts } from './reads/report-facts.js'

/**
 * What every answer of the proxy listener says to a browser: it is data, never a page of
 * the gateway's origin. Its `content-type` is read as sent (no sniffing a text as HTML),
 * and a page it makes anyway (the platform's HTML error page, a Laravel debug page, a
 * text that holds markup) loads nothing, runs no script, is framed nowhere and has an
 * origin of its own (`sandbox`): no script on the gateway's origin, where the team's key
 * is sent from and an ingress may serve the console.
 */
export const PROXY_ANSWER_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'; sandbox",
}
const PROXY_ANSWER_PAIRS = Object.entries(PROXY_ANSWER_HEADERS).flat()
const PROXY_ANSWER_LINES = Object.entries(PROXY_ANSWER_HEADERS).map(([name, value]) => `${name}: ${value}\r\n`).join('')

/**
 * What every proxy answer carries, whichever entrance writes it (the router's hooks, the
 * fast path of hits, a head rendered ahead): the request id and, for a team with a rate
 * limit, its standing; a report answer, what it cost and which of its figures may still
 * change (reads/report-facts.ts). These functions are the only writers of those fields,
 * so the entrances cannot drift apart. The entrances before the router (a hit, a head
 * rendered ahead) write PROXY_ANSWER_HEADERS with them; the router's answers get those
 * from the listener (compose/listeners.ts).
 */
export interface AnswerFields {
  reqId: string
  rate: [policy: string, state: string] | null
  report?: ReportFacts
}

/** Appends the fields to a writeHead list of names and values. */
export function pushAnswerFields(out: string[], own: AnswerFields): void {
  out.push('x-request-id', own.reqId, ...PROXY_ANSWER_PAIRS)
  if (own.rate) out.push(POLICY_HEADER, own.rate[0], STATE_HEADER, own.rate[1])
  const report = own.report
  if (report) out.push(USAGE_HEADER, report.usage, SETTLED_HEADER, report.finality[0], PROVISIONAL_HEADER, report.finality[1])
}

/**
 * The fields as lines of a head rendered ahead. Written without writeHead's checks: the
 * request id is a checked token (hooks/request-log.ts requestIdOf), the rest the
 * gateway's own numbers, the team's policy, and calendar dates the report's canonical
 * form checked.
 */
export function answerFieldLines(own: AnswerFields): string {
  const id = `x-request-id: ${own.reqId}\r\n${PROXY_ANSWER_LINES}`
  const lines = own.rate ? `${id}${POLICY_HEADER}: ${own.rate[0]}\r\n${STATE_HEADER}: ${own.rate[1]}\r\n` : id
  const report = own.report
  return report ? `${lines}${USAGE_HEADER}: ${report.usage}\r\n${SETTLED_HEADER}: ${report.finality[0]}\r\n${PROVISIONAL_HEADER}: ${report.finality[1]}\r\n` : lines
}

/** Sets the fields on an answer the router writes. */
export function setAnswerFields(reply: FastifyReply, own: AnswerFields): void {
  reply.header('x-request-id', own.reqId)
  if (own.rate) reply.header(POLICY_HEADER, own.rate[0]).header(STATE_HEADER, own.rate[1])
  setReportFacts(reply, own.report)
}

/**
 * Sets a report answer's facts on an answer the router writes (a report passed through
 * uncached). An answer that holds no report's figures (`figures` false: a redirect, the
 * platform's refusal) says what its call cost and nothing of a finality it does not have.
 */
export function setReportFacts(reply: FastifyReply, report: ReportFacts | undefined, figures = true): void {
  if (!report) return
  reply.header(USAGE_HEADER, report.usage)
  if (figures) reply.header(SETTLED_HEADER, report.finality[0]).header(PROVISIONAL_HEADER, report.finality[1])
}
