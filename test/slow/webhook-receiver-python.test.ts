import { spawnSync, type ChildProcess } from 'node:child_process'
import { createHmac, randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { needTool, TOOLS } from '../helpers/missing-tools.js'
import { docBlock } from '../helpers/readme-blocks.js'
import { runDocsReceiver } from '../helpers/docs-receiver.js'
import { waitFor } from '../helpers/wait.js'

// The Python receiver docs/jobs.md prints ("Pushed when done"), run as a user runs it
// (python3 receiver.py, its secrets and port in its environment), given pushes signed the
// way the docs' table says (webhook-receiver-docs.test.ts checks that formula against a
// gateway's real pushes): it acts on a push once, answers its repeat 204, refuses one
// changed, late or foreign-signed, and serves a push while another connection stays open,
// as the gateway keeps its own open between pushes.

const SECRET = `whsec_${randomBytes(24).toString('base64')}`
const hasPython = spawnSync('python3', ['--version']).status === 0

const children: ChildProcess[] = []
const sockets: Socket[] = []
const dirs: string[] = []
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy()
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) await new Promise((resolve) => child.once('exit', resolve).kill())
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** A push of job `job` as the docs sign it: `v1,` and the base64 of the HMAC-SHA256 of `{id}.{timestamp}.{body}`. */
function push(job: string, secret = SECRET, timestamp = Math.floor(Date.now() / 1000)): { headers: Record<string, string>; body: string } {
  const id = `msg_${job}`
  const body = JSON.stringify({ id: job, state: 'done', result: `/api/v1/jobs/${job}/result` })
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64')
  const signature = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')
  return { headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1,${signature}` }, body }
}

/** The receiver of the docs on a free port: its URL, its port and the jobs it acted on. */
async function startReceiver(): Promise<{ url: string; port: number; acted: () => string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'rgw-receiver-py-'))
  dirs.push(dir)
  writeFileSync(join(dir, 'receiver.py'), docBlock('docs/jobs.md', 'python', '# receiver.py'))
  const receiver = await runDocsReceiver(['python3', join(dir, 'receiver.py')], { WEBHOOK_SECRETS: SECRET }, children)
  return { url: receiver.url, port: receiver.port, acted: () => receiver.acted().map((a) => a.job) }
}

async function send(url: string, p: { headers: Record<string, string>; body: string }): Promise<number> {
  const res = await fetch(url, { method: 'POST', headers: p.headers, body: p.body })
  await res.arrayBuffer()
  return res.status
}

describe.skipIf(!needTool(TOOLS.python3, hasPython, 'the Python webhook receiver of docs/jobs.md'))('the Python webhook receiver docs/jobs.md prints', () => {
  it('acts on a push once, answers its repeat 204, and refuses it changed, late or signed with another secret', async () => {
    const receiver = await startReceiver()
    const first = push('job-1')
    expect(await send(receiver.url, first)).toBe(204)
    expect(await send(receiver.url, first)).toBe(204)
    expect(await send(receiver.url, { ...first, body: first.body.replace('done', 'failed') })).toBe(401)
    expect(await send(receiver.url, push('job-2', SECRET, Math.floor(Date.now() / 1000) - 600))).toBe(401)
    expect(await send(receiver.url, push('job-3', `whsec_${randomBytes(24).toString('base64')}`))).toBe(401)
    expect(receiver.acted()).toEqual(['job-1'])
  })

  // The gateway keeps its connection to a receiver between pushes (docs/jobs.md): a server of
  // one connection at a time would leave every other replica's push waiting while it stays.
  it('answers a push on a new connection while another connection stays open after its answer', async () => {
    const receiver = await startReceiver()
    const kept = connect(receiver.port, '127.0.0.1')
    sockets.push(kept)
    const held = push('job-held')
    let answer = ''
    kept.on('data', (c: Buffer) => (answer += c.toString('latin1')))
    kept.write(`POST /hook HTTP/1.1\r\nhost: localhost\r\nconnection: keep-alive\r\n${Object.entries(held.headers).map(([n, v]) => `${n}: ${v}\r\n`).join('')}content-length: ${Buffer.byteLength(held.body)}\r\n\r\n${held.body}`)
    await waitFor('the kept connection answered', () => answer.startsWith('HTTP/1.1 204'))
    expect(await send(receiver.url, push('job-other'))).toBe(204)
    expect(kept.destroyed).toBe(false)
    expect(receiver.acted()).toEqual(['job-held', 'job-other'])
  })
})
