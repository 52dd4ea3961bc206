/** What a platform 200 to a report read carries, by its content type and its first bytes. */
export type BodyKind = 'json' | 'html' | 'empty' | 'truncated-json' | 'mislabelled-json' | 'other'

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i

/**
 * Only a real report is stored: JSON by its content type and by its
 * body, which parses. Anything else says what it is, for the log line and the metric;
 * the body itself is never logged.
 */
export function reportBodyKind(contentType: string | undefined, body: Buffer): BodyKind {
  const text = body.toString('utf8')
  const start = text.trimStart()
  if (start === '') return 'empty'
  if (start.startsWith('<')) return 'html'
  let parsed = true
  try {
    JSON.parse(text)
  } catch {
    parsed = false
  }
  if (!parsed) return start.startsWith('{') || start.startsWith('[') ? 'truncated-json' : 'other'
  return contentType !== undefined && JSON_TYPE.test(contentType) ? 'json' : 'mislabelled-json'
}
