import { describe, expect, it } from 'vitest'
import { UPLOADER_KEY, withUploader } from '../helpers/build-gateway.js'
import { SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { ADMIN_TOKEN, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'
import { eachSecretAlone } from '../helpers/suspensions.js'

// A body the gateway does not parse (neither JSON nor a form: an upload, a multipart form)
// is passed on as it comes by a team with `write` and every advertiser. A secret of the
// gateway's in it is refused as in a JSON or form body: whatever its type, its length
// declared or chunked, and wherever the chunks of its transfer split the secret.

const sg = useAttackGateway({ yaml: withUploader(SANDBOX_TEAMS_YAML) })

eachSecretAlone(() => sg.gw)
const WRITE = '/api/v1/campaign/banner/create'
const platformToken = () => sg.gw.tokens.get('default').current()?.token as string

/** A write of `chunks` as the uploader, `content-length` declared unless `chunked`. */
async function upload(chunks: string[], type: string, chunked = false): Promise<{ status: number; text: string }> {
  const headers = { 'x-api-key': UPLOADER_KEY, 'content-type': type }
  const body = chunked
    ? new ReadableStream<Uint8Array>({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk))
          controller.close()
        },
      })
    : chunks.join('')
  const res = await fetch(`${sg.url}${WRITE}`, { method: 'POST', headers, body, ...(chunked ? { duplex: 'half' } : {}) } as RequestInit)
  return { status: res.status, text: await res.text() }
}

const refusal = /^body: holds a secret of the gateway's/

describe('a secret of the gateway in a body passed on as it comes', () => {
  it.each([
    ['application/octet-stream, its length declared', 'application/octet-stream', false],
    ['image/png, chunked', 'image/png', true],
    ['multipart/form-data, its length declared', 'multipart/form-data; boundary=b', false],
    ['multipart/form-data, chunked', 'multipart/form-data; boundary=b', true],
  ])('is refused in %s: 400, nothing reaches the platform', async (_how, type, chunked) => {
    for (const secret of [ADMIN_TOKEN, platformToken()]) {
      const body = `--b\r\ncontent-disposition: form-data; name="note"\r\n\r\nsee ${secret} here\r\n--b--\r\n`
      const res = await upload([body], type, chunked)
      expect(res.status, res.text).toBe(400)
      expect(JSON.parse(res.text).message).toMatch(refusal)
      expect(res.text).not.toContain(secret)
    }
    expect(sg.callerRequests()).toEqual([])
  })

  it('is refused split across two chunks of its transfer, at every place of the split', async () => {
    for (let at = 1; at < ADMIN_TOKEN.length; at += 7) {
      const res = await upload([`x`.repeat(100) + ADMIN_TOKEN.slice(0, at), ADMIN_TOKEN.slice(at) + 'y'.repeat(100)], 'application/octet-stream', true)
      expect(res.status, `split at ${at}`).toBe(400)
    }
    expect(sg.callerRequests()).toEqual([])
  })

  it('a body the platform reads no input from (text/plain, what fetch labels a string; no type at all) is refused: 400, nothing reaches the platform', async () => {
    // Laravel reads input from JSON, a form or a multipart form only: read without one, the
    // campaign list answers the token's own (parent) account, a write names nothing.
    for (const headers of [{ 'content-type': 'text/plain;charset=UTF-8' }, { 'content-type': 'Text/Plain' }, {}] as Record<string, string>[]) {
      const res = await fetch(`${sg.url}/api/v1/campaign/get`, { method: 'POST', headers: { 'x-api-key': UPLOADER_KEY, ...headers }, body: new TextEncoder().encode('{"userId":101}') })
      const text = await res.text()
      expect(res.status, text).toBe(400)
      expect(JSON.parse(text)).toMatchObject({ code: 'GW_BAD_REQUEST', message: expect.stringContaining("add content-type: application/json") })
    }
    expect(sg.callerRequests()).toEqual([])
  })

  it('a body without one is passed on, byte for byte', async () => {
    const body = `--b\r\ncontent-disposition: form-data; name="note"\r\n\r\nnothing secret\r\n--b--\r\n`
    for (const chunked of [false, true]) {
      const res = await upload([body.slice(0, 20), body.slice(20)], 'multipart/form-data; boundary=b', chunked)
      expect(res.status, res.text).not.toBe(400)
    }
    expect(sg.callerRequests().map((r) => r.path)).toEqual([WRITE, WRITE])
  })
})

itLoggedNoSecret(sg)
