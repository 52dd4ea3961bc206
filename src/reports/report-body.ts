import { isUtf8 } from 'node:buffer'
/** What a platform 200 to a report read carries, by its content type and its first bytes. */
export type BodyKind = 'json' | 'html' | 'empty' | 'truncated-json' | 'mislabelled-json' | 'no-report' | 'other'

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i
// A problem document (RFC 9457): an error by its content type, whatever its status and fields.
const PROBLEM_TYPE = /^application\/problem\+json\s*(?:;|$)/i

// The fields of Laravel's error body (`message`; `errors` on a 422; `exception`, `file`,
// `line` and `trace` in debug mode): an object of these alone is an error, whatever its status.
const ERROR_FIELDS = new Set(['message', 'errors', 'exception', 'file', 'line', 'trace'])

/**
 * Only a real report is stored: JSON by its content type and by its body, which parses
 * and holds a report (`reportFields`, cache.reportFields: `[]` any object or array but an
 * error's, `[*]` any JSON, else an object with one of these fields; a problem document,
 * application/problem+json, none but with `[*]`). Anything else says what
 * it is, for the log line and the metric; the body itself is never logged.
 */
export function reportBodyKind(contentType: string | undefined, body: Buffer, reportFields: readonly string[]): BodyKind {
  const text = body.toString('utf8')
  const start = text.trimStart()
  if (start === '') return 'empty'
  // A body in UTF-8 (by its charset, or by JSON's own, RFC 8259, without one) whose bytes are
  // none: cut or corrupted on the way, never json_encode's; its decoding above hid that.
  if (text.includes('\uFFFD') && inUtf8(contentType) && !isUtf8(body)) return 'other'
  if (start.startsWith('<')) return 'html'
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return start.startsWith('{') || start.startsWith('[') ? 'truncated-json' : 'other'
  }
  if (contentType === undefined || !JSON_TYPE.test(contentType)) return 'mislabelled-json'
  if (PROBLEM_TYPE.test(contentType) && !reportFields.includes('*')) return 'no-report'
  return holdsReport(parsed, reportFields) ? 'json' : 'no-report'
}

/** Whether `contentType` names UTF-8 as the body's charset, or names none. */
function inUtf8(contentType: string | undefined): boolean {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1]
  return charset === undefined || /^utf-?8$/i.test(charset)
}

/** Whether parsed JSON is a report by cache.reportFields (reportBodyKind). */
function holdsReport(parsed: unknown, reportFields: readonly string[]): boolean {
  if (reportFields.includes('*')) return true
  if (typeof parsed !== 'object' || parsed === null) return false
  if (reportFields.length > 0) return !Array.isArray(parsed) && reportFields.some((field) => Object.hasOwn(parsed, field))
  return Array.isArray(parsed) || Object.keys(parsed).some((field) => !ERROR_FIELDS.has(field))
}
