// The spellings in which a secret comes back inside text that someone else wrote: a
// platform that reflects the request it got (a debug page, an echo route, an error that
// quotes its input), or a value that passed through an encoder before reaching a log
// line. The gateway looks for each of them (platform answers: token-echo.ts; log lines:
// logger.ts). A secret is recognised
// - as it is;
// - escaped inside a JSON string, as JSON.stringify writes it and as PHP's json_encode
//   does by default (Laravel's JSON answers: `/` as `\/`, non-ASCII as `\uXXXX`);
// - percent-encoded, as encodeURIComponent, PHP's rawurlencode and urlencode write it,
//   the hex digits upper- or lower-case (the lower-case forms of those three);
// - HTML-escaped, as PHP's htmlspecialchars writes it (an error page), with each of its
//   quote flags;
// - as a page or a dump of the platform's writes JSON: Blade's `@json` (`<` as `\u003C`),
//   a JSON text quoted in another (escaped twice);
// - in base64, standard or URL-safe, at each of the three places it can start within a
//   longer encoded value (its first and last characters then depend on the bytes around
//   it: the characters that do not are looked for), once it is MIN_BASE64_CHARS long.
// Each of those in bytes: as UTF-8 writes it (and every charset that writes ASCII as
// ASCII), and as UTF-16 and UTF-32 do, in either byte order (wideForms): a body a reader
// decodes in one of those, by its charset, its byte-order mark or a guess.
// Not recognised: any other encoding or encryption, a secret cut in parts, or one
// whose letters changed case; nor spellings no PHP or Laravel default writes of a token's
// characters (docs/decisions/token-spellings.md): hex, a `\u` or an HTML entity for each
// character, base64 of its UTF-16 form.

/** Secrets shorter than this are looked for in base64 no more: the encoded part left could be ordinary text. */
export const MIN_BASE64_CHARS = 16

/** Every spelling of `secret` above, each once, the secret itself first. */
export function secretForms(secret: string): string[] {
  const written = [...escapedForms(secret), ...pageForms(secret)]
  return [...new Set(secret.length >= MIN_BASE64_CHARS ? [...written, ...base64Forms(Buffer.from(secret))] : written)]
}

/**
 * The spellings of `secret` above but base64, each once, the secret itself first: those
 * text written by the gateway itself may hold (a log line escapes it as JSON, a URL
 * percent-encodes it); for no base64 is ever written of a secret, and each form is one
 * more for every line to be scrubbed of.
 */
export function escapedForms(secret: string): string[] {
  const json = JSON.stringify(secret).slice(1, -1)
  const percent = [encodeURIComponent(secret), rawUrlEncoded(secret), urlEncoded(secret)]
  return [...new Set([secret, json, phpJson(json), ...percent, ...percent.map((form) => form.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase())), htmlEscaped(secret)])]
}

// JSON_HEX_TAG | JSON_HEX_APOS | JSON_HEX_AMP | JSON_HEX_QUOT: each of those characters as json_encode writes it then (upper-case hex).
const JSON_HEX: Record<string, string> = { '\\"': '\\u0022', '<': '\\u003C', '>': '\\u003E', '&': '\\u0026', "'": '\\u0027' }

/**
 * The spellings of `secret` that a platform's page or dump writes and the gateway never
 * does: JSON as Blade's `@json` and `Js::from` write it into a page (json_encode with the
 * JSON_HEX_* flags), a JSON text quoted in another (JSON.stringify's and json_encode's
 * forms escaped once more: a log line's context, an error that quotes a body), and
 * htmlspecialchars' other quote flags (ENT_HTML5's `&apos;`, ENT_COMPAT's `'` as it is,
 * as Symfony's error page writes it, ENT_NOQUOTES). A token of a JWT's or base64url's
 * characters is its own form in each.
 */
function pageForms(secret: string): string[] {
  const json = JSON.stringify(secret).slice(1, -1)
  const php = phpJson(json)
  const markup = secret.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
  return [
    php.replace(/\\"|[<>&']/g, (c) => JSON_HEX[c] as string),
    JSON.stringify(json).slice(1, -1),
    phpJson(JSON.stringify(php).slice(1, -1)),
    markup.replace(/"/g, '&quot;').replace(/'/g, '&apos;'),
    markup.replace(/"/g, '&quot;'),
    markup,
  ]
}

/** json_encode's default escapes beyond JSON.stringify's: `/`, and every non-ASCII character as `\uXXXX` (lower-case hex). */
function phpJson(json: string): string {
  return json.replace(/\//g, '\\/').replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/** RFC 3986 percent-encoding (PHP's rawurlencode): every byte but letters, digits and `-._~`. */
function rawUrlEncoded(secret: string): string {
  return encodeURIComponent(secret).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
}

/** PHP's urlencode: rawurlencode's, with `~` encoded too (a secret holds no space, which it writes `+`). */
function urlEncoded(secret: string): string {
  return rawUrlEncoded(secret).replace(/~/g, '%7E')
}

function htmlEscaped(secret: string): string {
  return secret.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#039;')
}

/**
 * The characters of `bytes` in base64 (standard and URL-safe, unpadded) that do not
 * depend on the bytes around them, for each of the three offsets modulo 3 it may start at.
 */
function base64Forms(bytes: Buffer): string[] {
  const forms: string[] = []
  for (let before = 0; before < 3; before++) {
    const encoded = Buffer.concat([Buffer.alloc(before), bytes]).toString('base64')
    // Character i covers bits [6i, 6i + 6): those wholly within the secret's bits are its own.
    const core = encoded.slice(Math.ceil((8 * before) / 6), Math.floor((8 * (before + bytes.length)) / 6))
    forms.push(core, core.replace(/\+/g, '-').replace(/\//g, '_'))
  }
  return forms
}

/** Each of `forms` as UTF-16 and UTF-32 write it, little- and big-endian. */
export function wideForms(forms: readonly string[]): Buffer[] {
  return forms.flatMap((form) => {
    const units = [...form].map((c) => c.codePointAt(0) as number)
    const le16 = Buffer.from(form, 'utf16le')
    const le32 = Buffer.alloc(units.length * 4)
    const be32 = Buffer.alloc(units.length * 4)
    units.forEach((unit, i) => {
      le32.writeUInt32LE(unit, i * 4)
      be32.writeUInt32BE(unit, i * 4)
    })
    return [le16, Buffer.from(le16).swap16(), le32, be32]
  })
}
