import { describe, expect, it } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { KEYS } from '../helpers/build-gateway.js'
import { useReflectingGateway } from '../helpers/fixtures.js'
import { rawHttp, rawRequest, type RawResponse } from '../helpers/sandbox-gateway.js'

// The platform token handed back in another spelling. A platform that reflects the
// request it got (a debug page, an echo route, an error quoting its input) rarely writes
// the token byte for byte: Laravel's json_encode writes `/` as `\/`, a URL or a form
// percent-encodes it, an error page HTML-escapes it, a dump base64-encodes it. A token
// with such characters (a pasted token may be any printable text) comes back in each
// spelling, in the body (plain, gzipped, in chunks of a few bytes) and in headers: no
// spelling reaches a caller or a log line (src/observe/secret-forms.ts lists them).

const PLATFORM_TOKEN = "pasted/platform+token=0123456789&<abcdef>~'!"
const WRITER = KEYS.writer
// One team that may write to every account: all it sends reaches the platform.
const YAML = `teams: { writers: { keys: ["${hashApiKey(WRITER)}"], advertisers: ["*"], write: true } }\n`

const php = (text: string): string => text.replace(/\//g, '\\/')
// Blade's @json (and Js::from): json_encode with JSON_HEX_TAG | JSON_HEX_APOS | JSON_HEX_AMP | JSON_HEX_QUOT.
const HEX: Record<string, string> = { '\\"': '\\u0022', '<': '\\u003C', '>': '\\u003E', '&': '\\u0026', "'": '\\u0027' }
const blade = (text: string): string => php(JSON.stringify(text)).replace(/\\"|[<>&']/g, (c) => HEX[c] as string)
const base64 = (text: string): string => JSON.stringify({ dump: Buffer.from(text).toString('base64') })
const holds = (spelled: string) => (text: string): boolean => text.includes(spelled)
/** Whether `text` holds a base64 value (`dump` as the stand-in writes it) that decodes to the token. */
const holdsInBase64 = (text: string): boolean =>
  [...text.matchAll(/[A-Za-z0-9+/_-]{20,}={0,2}/g)].some(([run]) => Buffer.from(run, run.includes('-') || run.includes('_') ? 'base64url' : 'base64').toString('latin1').includes(PLATFORM_TOKEN))

const SPELLINGS: [string, (text: string) => string, (text: string) => boolean][] = [
  ['json_encode (`/` as `\\/`)', php, holds(JSON.stringify(PLATFORM_TOKEN).slice(1, -1).replace(/\//g, '\\/'))],
  ['percent-encoded', (text) => encodeURIComponent(text), holds(encodeURIComponent(PLATFORM_TOKEN))],
  ['percent-encoded, lower-case hex', (text) => encodeURIComponent(text).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()), holds(encodeURIComponent(PLATFORM_TOKEN).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()))],
  ['HTML-escaped', (text) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/'/g, '&#039;'), holds(PLATFORM_TOKEN.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/'/g, '&#039;'))],
  ['JSON quoted in JSON by json_encode (`/` as `\\\\\\/`)', (text) => php(JSON.stringify({ context: php(text) })), holds(php(JSON.stringify(php(PLATFORM_TOKEN)).slice(1, -1)))],
  ['Blade\'s @json (`<` as `\\u003C`)', (text) => `<script>window.data = ${blade(text)}</script>`, holds(blade(PLATFORM_TOKEN).slice(1, -1))],
  ['htmlspecialchars with ENT_COMPAT (`\'` as it is)', (text) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'), holds(PLATFORM_TOKEN.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'))],
  ['base64, inside a longer value', base64, holdsInBase64],
  ['base64, one byte further', (text) => base64(`x${text}`), holdsInBase64],
  ['base64, two bytes further', (text) => base64(`xy${text}`), holdsInBase64],
  ['base64url', (text) => JSON.stringify({ dump: Buffer.from(text).toString('base64url') }), holdsInBase64],
]

describe('a platform that hands the token back in another spelling', () => {
  const { reflecting, gw } = useReflectingGateway(PLATFORM_TOKEN, YAML)

  const send = (headers: Record<string, string> = {}): Promise<RawResponse> =>
    rawRequest(gw.port, rawHttp('POST', '/api/v1/campaign/get', { key: WRITER, headers: { 'content-type': 'application/json', ...headers }, body: '{"userId":101}' }))

  it('the stand-in writes the token as it is when told nothing, and the gateway stops it', async () => {
    const res = await send()
    expect(res.status).toBe(502)
    reflecting.requests.length = 0
  })

  it.each(SPELLINGS)('%s: the answer is 502 GW_UPSTREAM, in its headers or its body (plain, gzipped, in chunks of 3 bytes)', async (_name, spell, spelledIn) => {
    reflecting.spell = spell
    // The stand-in does write that spelling.
    expect(spelledIn(spell(JSON.stringify({ authorization: `Bearer ${PLATFORM_TOKEN}` })))).toBe(true)
    const answers: [string, RawResponse][] = []
    for (const echoHeaders of [true, false]) {
      reflecting.echoHeaders = echoHeaders
      for (const chunkBytes of [null, 3]) {
        reflecting.chunkBytes = chunkBytes
        for (const encoding of [null, 'gzip']) {
          const res = await send(encoding === null ? {} : { 'accept-encoding': encoding })
          answers.push([`headers ${echoHeaders}, chunks ${chunkBytes}, ${encoding}`, res])
        }
      }
    }
    expect(reflecting.requests.length).toBe(answers.length)
    for (const [what, res] of answers) {
      expect(res.status, what).toBe(502)
      expect(JSON.parse(res.body), what).toMatchObject({ code: 'GW_UPSTREAM', message: expect.stringContaining('carried the gateway\'s token back') })
      expect(spelledIn(res.text), what).toBe(false)
    }
    expect(spelledIn(gw.logs.text())).toBe(false)
  })

  it('an answer that holds none of the spellings passes: the token\'s own characters, apart, are no token', async () => {
    reflecting.spell = () => JSON.stringify({ data: [{ id: 1, name: 'pasted platform token 0123456789 abcdef' }] })
    const res = await send()
    expect(res.status).toBe(200)
  })
})

