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

// The same holds of the secrets of the files the start reads besides the *_FILE variables':
// ADMIN_TOKENS_FILE's tokens (their digests, or a token pasted where its digest belongs)
// and the teams' keys and webhook secrets of TEAMS_FILE and CONFIG_FILE, those of a file
// the start refuses too, as far as it could be read. Found by a black-box operator pass,
// session 136: each was repeated whole.
describe('a start refusal never repeats a secret of ADMIN_TOKENS_FILE or of a teams file pasted into another setting', () => {
  const base = { PLATFORM_BASE_URL: 'http://127.0.0.1:47963', PLATFORM_TOKEN: TOKEN }
  const DIGEST = `sha256:${'3f'.repeat(32)}`
  const KEY_HASH = `sha256:${'c4'.repeat(32)}`
  const PASTED_ADMIN_TOKEN = 'pasted-admin-token-0123456789abcdef'
  const WEBHOOK_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
  const team = `  acme:\n    keys: ["${KEY_HASH}"]\n    advertisers: [101]\n    webhook: {url: "https://hooks.example/jobs", secret: "${WEBHOOK_SECRET}"}\n`
  const dir = mkdtempSync(join(tmpdir(), 'start-refusal-files-'))
  const file = (name: string, text: string): string => {
    writeFileSync(join(dir, name), text)
    return join(dir, name)
  }
  const admins = file('admins', `# operators\nalice:${DIGEST}:viewer\n`)
  const pastedAdmins = file('pasted-admins', `bob:${PASTED_ADMIN_TOKEN}\n`)
  const teams = file('teams.yaml', `teams:\n${team}`)
  const config = file('config.yaml', `jobs:\n  webhookHosts: [hooks.example]\nteams:\n${team}`)
  // Cut off after the team: the file is no YAML, its secret read all the same.
  const broken = file('broken.yaml', `teams:\n${team}  other: [\n`)

  it.each([
    ['LOG_LEVEL holds an ADMIN_TOKENS_FILE digest', { ...base, ADMIN_TOKENS_FILE: admins, LOG_LEVEL: DIGEST }, 'LOG_LEVEL', DIGEST],
    ['PLATFORM_BASE_URL\'s path holds a token pasted into ADMIN_TOKENS_FILE (the file refused too)', { ...base, ADMIN_TOKENS_FILE: pastedAdmins, PLATFORM_BASE_URL: `http://127.0.0.1:47963/${PASTED_ADMIN_TOKEN}` }, 'PLATFORM_BASE_URL', PASTED_ADMIN_TOKEN],
    ['PLATFORM_BASE_URL\'s path holds a webhook secret of TEAMS_FILE', { ...base, TEAMS_FILE: teams, PLATFORM_BASE_URL: `http://127.0.0.1:47963/${WEBHOOK_SECRET}` }, 'PLATFORM_BASE_URL', WEBHOOK_SECRET],
    ['LOG_LEVEL holds a team key of CONFIG_FILE', { ...base, CONFIG_FILE: config, LOG_LEVEL: KEY_HASH }, 'LOG_LEVEL', KEY_HASH],
    ['GATEWAY_SECRET_FILE\'s path holds a webhook secret of a TEAMS_FILE that is no YAML', { ...base, TEAMS_FILE: broken, GATEWAY_SECRET_FILE: `/run/${WEBHOOK_SECRET}` }, 'GATEWAY_SECRET_FILE', WEBHOOK_SECRET],
  ])('%s: exit 78, the setting named, the secret not shown', (_, env, setting, secret) => {
    const r = start(env)
    expect(r.status).toBe(78)
    expect(r.stderr).toContain(setting)
    expect(r.stderr).toContain('[REDACTED]')
    expect(r.stderr + r.stdout).not.toContain(secret)
  })

  it('HOST holding a team\'s webhook secret: exit 1, the cannot-listen line without it', () => {
    const r = start({ ...base, CONFIG_FILE: config, HOST: WEBHOOK_SECRET })
    expect(r.status).toBe(1)
    expect(r.stderr).toMatch(/^report-gateway: cannot listen on \[REDACTED\]:47961: .* \(set HOST, PORT\)\n$/)
    expect(r.stderr + r.stdout).not.toContain(WEBHOOK_SECRET.slice('whsec_'.length))
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
