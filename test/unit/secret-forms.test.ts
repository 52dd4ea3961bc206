import { describe, expect, it } from 'vitest'
import { SecretSet } from '../../src/observe/logger.js'
import { escapedForms, MIN_BASE64_CHARS, secretForms, wideForms } from '../../src/observe/secret-forms.js'

// The spellings of a secret the gateway recognises (its platform token in an answer, any
// secret in a log line), each found wherever an encoder puts it, and none of them in
// ordinary text.

const PASTED = "pasted/platform+token=0123456789&<abcdef>~'!\"\\é"
const JWT = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiI0NTYiLCJleHAiOjE4MDAwMDAwMDB9.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg'

/** `value` as PHP's json_encode writes it by default: `/` as `\/`, every non-ASCII UTF-16 unit as `\uXXXX`. */
const phpEncoded = (value: unknown): string => JSON.stringify(value).replace(/\//g, '\\/').replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)

/** Whether one of `secret`'s spellings shows in `text`. */
function found(secret: string, text: string): boolean {
  return secretForms(secret).some((form) => text.includes(form))
}

describe('secretForms', () => {
  it.each([PASTED, JWT])('finds %s written by each encoder, inside longer text', (secret) => {
    const around = (inner: string): string => `{"before":"x","dump":"${inner}","after":"y"}`
    const written = [
      JSON.stringify({ authorization: `Bearer ${secret}` }),
      phpEncoded({ authorization: `Bearer ${secret}` }),
      `https://platform.example/debug?token=${encodeURIComponent(secret)}&x=1`,
      `/debug?token=${encodeURIComponent(secret).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase())}`,
      `<td>${secret.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#039;')}</td>`,
      // htmlspecialchars with ENT_QUOTES | ENT_HTML5, ENT_COMPAT (Symfony's error page), ENT_NOQUOTES.
      `<td>${secret.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;')}</td>`,
      `<td>${secret.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')}</td>`,
      `<td>${secret.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')}</td>`,
      // Blade's @json and Js::from: json_encode with JSON_HEX_TAG | JSON_HEX_APOS | JSON_HEX_AMP | JSON_HEX_QUOT.
      `<script>window.data = ${phpEncoded({ authorization: `Bearer ${secret}` }).replace(/\\"|[<>&']/g, (c) => ({ '\\"': '\\u0022', '<': '\\u003C', '>': '\\u003E', '&': '\\u0026', "'": '\\u0027' })[c] as string)}</script>`,
      // A JSON text quoted in another (a log line's context, an error that quotes a body), by JSON.stringify and json_encode.
      JSON.stringify({ context: JSON.stringify({ authorization: `Bearer ${secret}` }) }),
      phpEncoded({ context: phpEncoded({ authorization: `Bearer ${secret}` }) }),
      ...['', 'a', 'ab', 'abc'].flatMap((prefix) => [
        around(Buffer.from(`${prefix}Bearer ${secret} and more`).toString('base64')),
        around(Buffer.from(`${prefix}Bearer ${secret}`).toString('base64url')),
      ]),
    ]
    for (const text of written) expect(found(secret, text), text).toBe(true)
  })

  it('lists the secret itself first, and each spelling once', () => {
    const forms = secretForms(PASTED)
    expect(forms[0]).toBe(PASTED)
    expect(new Set(forms).size).toBe(forms.length)
    // A JWT's characters need no escape: it is looked for as it is, and in base64.
    expect(escapedForms(JWT)).toEqual([JWT])
  })

  it('finds none in a report that holds no token, though its rows share its characters', () => {
    const rows = Array.from({ length: 5000 }, (_, i) => `{"campaignId":${101000 + i},"campaignName":"eyJhbGciOiJSUzI1NiJ9 ${i}","note":"${Buffer.from(`row ${i} of the report`).toString('base64')}"}`)
    expect(found(JWT, `{"data":[${rows.join(',')}]}`)).toBe(false)
  })

  it(`looks for no base64 of a secret under ${MIN_BASE64_CHARS} characters: what is left of it could be any text`, () => {
    expect(secretForms('short-secret')).toEqual(escapedForms('short-secret'))
    expect(escapedForms('short-secret')).toEqual(['short-secret'])
  })
})

describe('the wide forms', () => {
  it('are each form as a reader decodes it from UTF-16 and UTF-32, in either byte order', () => {
    const decoder = (label: string) => new TextDecoder(label)
    const [le16, be16, le32, be32] = wideForms([PASTED]) as [Buffer, Buffer, Buffer, Buffer]
    expect(decoder('utf-16le').decode(le16)).toBe(PASTED)
    expect(decoder('utf-16be').decode(be16)).toBe(PASTED)
    // TextDecoder reads no UTF-32: its code units, read by hand.
    expect(String.fromCodePoint(...Array.from({ length: le32.length / 4 }, (_, i) => le32.readUInt32LE(i * 4)))).toBe(PASTED)
    expect(String.fromCodePoint(...Array.from({ length: be32.length / 4 }, (_, i) => be32.readUInt32BE(i * 4)))).toBe(PASTED)
    expect(wideForms(secretForms(PASTED))).toHaveLength(4 * secretForms(PASTED).length)
  })
})

describe('a log line', () => {
  it('is scrubbed of a secret escaped as the line\'s JSON writes it, or percent-encoded', () => {
    const secrets = new SecretSet()
    secrets.add(PASTED)
    const line = JSON.stringify({ msg: `login failed for ${PASTED}`, url: `/oauth/token?password=${encodeURIComponent(PASTED)}` })
    const scrubbed = secrets.scrub(line)
    expect(scrubbed).toBe('{"msg":"login failed for [REDACTED]","url":"/oauth/token?password=[REDACTED]"}')
    for (const form of escapedForms(PASTED)) expect(scrubbed).not.toContain(form)
  })
})
