// Small HTTP helpers over undici for the benchmark's control calls (not the load).

import { setTimeout as sleep } from 'node:timers/promises'
import { request } from 'undici'

export async function http(method, url, { headers = {}, json, dispatcher } = {}) {
  const res = await request(url, {
    method,
    dispatcher,
    headers: json === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: json === undefined ? undefined : JSON.stringify(json),
  })
  const body = Buffer.from(await res.body.arrayBuffer())
  return { status: res.statusCode, headers: res.headers, body, json: () => JSON.parse(body.toString('utf8')) }
}

export async function waitForHttp(url, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs
  let last = null
  while (Date.now() < deadline) {
    try {
      const res = await http('GET', url)
      if (res.status < 500) return
      last = new Error(`status ${res.status}`)
    } catch (err) {
      last = err
    }
    await sleep(100)
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms (${last?.message ?? ''})`)
}
