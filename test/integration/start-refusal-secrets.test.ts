import { spawnSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { beforeAll, describe, expect, it } from 'vitest'
import { ensureBuilt } from '../helpers/dist.js'

// contract.md, "When the start stops": "A secret's value is never printed." An operator
// who pastes a secret into the wrong variable (the token as LOG_LEVEL, GATEWAY_SECRET as
// PORT, the token in PLATFORM_BASE_URL's query, the token as HOST) gets the refusal's line,
// exit 78 (or 1 for a listener), with the secret written [REDACTED]: the line goes to the
// pod's log and its events, which more people read than hold the secret. Found by a
// black-box operator pass, session 135: each value was repeated whole.

const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url))
const TOKEN = 'eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.start-refusal-secret-token'
const GATEWAY_SECRET = 'Bd4TLFZA9fyMOJMRjH3yJi+j26Gt2AZE/XRQlM5gg6c='
const FILE_TOKEN = 'file-token-start-refusal-0123456789abcdef'

function start(env: Record<string, string>): { status: number | null; stderr: string; stdout: string } {
  const r = spawnSync(process.execPath, [MAIN], { encoding: 'utf8', timeout: 20_000, env: { PATH: process.env.PATH ?? '', PORT: '47961', ADMIN_PORT: '47962', HOST: '127.0.0.1', ...env } })
  return { status: r.status, stderr: r.stderr, stdout: r.stdout }
}

beforeAll(() => ensureBuilt(MAIN), 130_000)

describe('a start refusal never repeats a secret pasted into another setting', () => {
  const base = { PLATFORM_BASE_URL: 'http://127.0.0.1:47963', PLATFORM_TOKEN: TOKEN }

  it.each([
    ['LOG_LEVEL holds the platform token', { ...base, LOG_LEVEL: TOKEN }, 'LOG_LEVEL', TOKEN, '[REDACTED]'],
    ['PORT holds GATEWAY_SECRET', { ...base, GATEWAY_SECRET, PORT: GATEWAY_SECRET }, 'PORT', GATEWAY_SECRET, '[REDACTED]'],
    // Its query is not shown at all (below).
    ['PLATFORM_BASE_URL carries the token in its query', { ...base, PLATFORM_BASE_URL: `http://127.0.0.1:47963/?access_token=${TOKEN}` }, 'PLATFORM_BASE_URL', TOKEN, '?***'],
  ])('%s: exit 78, the setting named, the secret not shown', (_, env, setting, secret, shown) => {
    const r = start(env)
    expect(r.status).toBe(78)
    expect(r.stderr).toContain(`report-gateway: invalid configuration: ${setting}`)
    expect(r.stderr).toContain(shown)
    expect(r.stderr + r.stdout).not.toContain(secret)
  })

  it('a token read from PLATFORM_TOKEN_FILE (a trailing newline) pasted into LOG_LEVEL is not repeated either', () => {
    const dir = mkdtempSync(join(tmpdir(), 'start-refusal-'))
    writeFileSync(join(dir, 'token'), `${FILE_TOKEN}\n`)
    const r = start({ PLATFORM_BASE_URL: 'http://127.0.0.1:47963', PLATFORM_TOKEN_FILE: join(dir, 'token'), LOG_LEVEL: FILE_TOKEN })
    expect(r.status).toBe(78)
    expect(r.stderr).toContain('LOG_LEVEL')
    expect(r.stderr).not.toContain(FILE_TOKEN)
  })

  it('HOST holding the token: exit 1, the cannot-listen line without it', () => {
    const r = start({ ...base, HOST: TOKEN })
    expect(r.status).toBe(1)
    expect(r.stderr).toMatch(/^report-gateway: cannot listen on \[REDACTED\]:47961: .* \(set HOST, PORT\)\n$/)
    expect(r.stderr + r.stdout).not.toContain(TOKEN)
  })
})

// The same lines name a URL's scheme, host, port and path, never its query or fragment
// (`?***`, `#***`), where a receiver's API key or a signed token rides, as GET /admin/config
// shows a URL: the key is no secret of the gateway's, so no scrub would find it.
describe('a refused URL is named without its query', () => {
  const base = { PLATFORM_BASE_URL: 'http://127.0.0.1:47963', PLATFORM_TOKEN: TOKEN }
  const API_KEY = 'receiver-api-key-0123456789'

  it.each([
    ['OTEL_EXPORTER_OTLP_ENDPOINT without a scheme', { ...base, OTEL_EXPORTER_OTLP_ENDPOINT: `otel.example:4318?api_key=${API_KEY}` }, 'OTEL_EXPORTER_OTLP_ENDPOINT'],
    ['OTEL_EXPORTER_OTLP_ENDPOINT of another scheme', { ...base, OTEL_EXPORTER_OTLP_ENDPOINT: `ftp://otel.example/v1?api_key=${API_KEY}` }, 'OTEL_EXPORTER_OTLP_ENDPOINT'],
    ['PLATFORM_BASE_URL with a path and query', { ...base, PLATFORM_BASE_URL: `http://127.0.0.1:47963/api?sig=${API_KEY}#${API_KEY}` }, 'PLATFORM_BASE_URL'],
  ])('%s: exit 78, the query ***', (_, env, setting) => {
    const r = start(env)
    expect(r.status).toBe(78)
    expect(r.stderr).toContain(`report-gateway: invalid configuration: ${setting}`)
    expect(r.stderr).toContain('?***')
    expect(r.stderr + r.stdout).not.toContain(API_KEY)
  })
})
