import type { FastifyRequest } from 'fastify'
import type { SandboxRequestRecord } from './types.js'

// The request log's entry of each request, so that the body parser and the routes can
// add to it what they learn (the body, the accounts a call acted on).

const records = new WeakMap<FastifyRequest['raw'], SandboxRequestRecord>()

export function startRecord(request: FastifyRequest): SandboxRequestRecord {
  const url = request.url
  const mark = url.indexOf('?')
  const record: SandboxRequestRecord = {
    method: request.method,
    path: mark === -1 ? url : url.slice(0, mark),
    query: mark === -1 ? '' : url.slice(mark + 1),
    headers: request.headers,
    body: '',
    accounts: [],
    at: Date.now(),
    waitedMs: null,
  }
  records.set(request.raw, record)
  return record
}

/** The record of a request, when it has one (the /__sandbox controls do not). */
export function recordOf(request: FastifyRequest): SandboxRequestRecord | undefined {
  return records.get(request.raw)
}

/** Kept as text: what was sent, for tests to read. */
export function keepBody(request: FastifyRequest, body: Buffer): void {
  const record = records.get(request.raw)
  if (record !== undefined) record.body = body.toString('utf8')
}
