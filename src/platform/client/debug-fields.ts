// A Laravel platform running with APP_DEBUG=true answers an exception with its debug
// fields beside `message` (Illuminate\Foundation\Exceptions\Handler::convertExceptionToArray):
// `exception` (the class), `file` and `line` (where it was thrown) and `trace` (the call
// stack: each frame's file, line, class and function). A 5xx never reaches a caller (502);
// a 4xx body does (contract, "Errors"), and those fields tell a caller the platform's
// paths, its framework and its code's layout, none of which a caller acts on. They are
// dropped from a body of that exact shape: a JSON object whose `exception` is a string and
// whose `trace` is a list. Any other body (a platform not in debug mode, a field of the
// same name in another shape) passes as it came, byte for byte: the rule needs no setting,
// as it changes nothing but an answer that shows it is a debug answer.

const DEBUG_FIELDS = new Set(['exception', 'file', 'line', 'trace'])

/** The largest refusal read for them: a debug trace is tens of KiB; a larger body passes as it came. */
export const REFUSAL_READ_BYTES = 1024 * 1024

const EXCEPTION_KEY = Buffer.from('"exception"')
const TRACE_KEY = Buffer.from('"trace"')

/** `body` (a refusal's, decoded) without Laravel's debug fields; null: it has none, or is over REFUSAL_READ_BYTES. */
export function withoutDebugFields(body: Buffer): Buffer | null {
  if (body.length > REFUSAL_READ_BYTES || !body.includes(EXCEPTION_KEY) || !body.includes(TRACE_KEY)) return null
  let parsed: unknown
  try {
    // A UTF-8 byte-order mark (a PHP file saved with one prints it first) is no part of the JSON.
    parsed = JSON.parse(body.toString('utf8').replace(/^\uFEFF/, ''))
  } catch {
    return null
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return null
  const fields = parsed as Record<string, unknown>
  if (typeof fields.exception !== 'string' || !Array.isArray(fields.trace)) return null
  return Buffer.from(JSON.stringify(Object.fromEntries(Object.entries(fields).filter(([name]) => !DEBUG_FIELDS.has(name)))))
}
