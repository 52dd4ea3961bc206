import { describe, expect, it } from 'vitest'
import { scrubSecrets, startSecrets } from '../../src/observe/start-secrets.js'

// What a start refusal scrubs of the files the environment names besides a secret's
// `*_FILE`: ADMIN_TOKENS_FILE's tokens, the teams' keys and webhook secrets of TEAMS_FILE
// and CONFIG_FILE, those of a file the start refuses as far as it reads
// (test/integration/start-refusal-secrets.test.ts runs the start itself).

const DIGEST = `sha256:${'5e'.repeat(32)}`
const KEY_HASH = `sha256:${'a7'.repeat(32)}`
const ENTRY_HASH = `sha256:${'d2'.repeat(32)}`
const WEBHOOK_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
const TEAM = `keys: ["${KEY_HASH}", {hash: "${ENTRY_HASH}", id: k2}]\n    advertisers: [101]\n    webhook: {url: "https://hooks.example/jobs", secret: "${WEBHOOK_SECRET}"}`

const secretsOf = (name: string, text: string | Error): string[] =>
  startSecrets({ [name]: '/virtual/file' }, () => {
    if (text instanceof Error) throw text
    return text
  })

describe('startSecrets: the secrets of ADMIN_TOKENS_FILE, TEAMS_FILE and CONFIG_FILE', () => {
  it.each([
    ['an admin token\'s digest, its role aside', 'ADMIN_TOKENS_FILE', `# operators\n\nalice:${DIGEST}:viewer\n`, [DIGEST]],
    ['a token pasted in a digest\'s place, and the line that holds it', 'ADMIN_TOKENS_FILE', 'bob:pasted-token-0123456789\n', ['bob:pasted-token-0123456789', 'pasted-token-0123456789']],
    ['a team\'s keys (hashes and entries) and its webhook secret in both spellings', 'TEAMS_FILE', `teams:\n  acme:\n    ${TEAM}\n`, [KEY_HASH, ENTRY_HASH, WEBHOOK_SECRET, WEBHOOK_SECRET.slice('whsec_'.length)]],
    ['a team written outside teams:', 'TEAMS_FILE', `acme:\n    ${TEAM}\n`, [KEY_HASH, ENTRY_HASH, WEBHOOK_SECRET, WEBHOOK_SECRET.slice('whsec_'.length)]],
    ['CONFIG_FILE\'s teams, none of its settings', 'CONFIG_FILE', `logLevel: info\njobs:\n  webhookHosts: [hooks.example]\nteams:\n  acme:\n    keys: ["${KEY_HASH}"]\n    advertisers: [101]\n`, [KEY_HASH]],
    ['what stands before the fault of a file that is no YAML', 'TEAMS_FILE', `teams:\n  acme:\n    ${TEAM}\n  other: [\n`, [KEY_HASH, ENTRY_HASH, WEBHOOK_SECRET, WEBHOOK_SECRET.slice('whsec_'.length)]],
    ['nothing of a file that cannot be read', 'TEAMS_FILE', new Error('ENOENT'), []],
  ])('%s', (_, name, text, secrets) => {
    expect(secretsOf(name, text)).toEqual(secrets)
  })

  it('scrubs a team\'s webhook secret pasted into another setting\'s line', () => {
    const line = `PLATFORM_BASE_URL (platform.baseUrl): must be an origin only (got "http://127.0.0.1:47963/${WEBHOOK_SECRET}")`
    expect(scrubSecrets(line, secretsOf('TEAMS_FILE', `teams:\n  acme:\n    ${TEAM}\n`))).toBe('PLATFORM_BASE_URL (platform.baseUrl): must be an origin only (got "http://127.0.0.1:47963/[REDACTED]")')
  })
})

describe("startSecrets: the trace exporter's headers (OTEL_EXPORTER_OTLP_HEADERS, _TRACES_HEADERS)", () => {
  it.each(['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS'])('%s: each value, decoded, and an authorization\'s credential alone', (name) => {
    expect(startSecrets({ [name]: 'authorization=Bearer%20collector-tok-0123,x-api-key=collector-key-0123' })).toEqual(['Bearer collector-tok-0123', 'collector-tok-0123', 'collector-key-0123'])
  })

  it("scrubs the collector's token pasted into another setting's line", () => {
    const line = 'LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent (got "collector-tok-0123")'
    expect(scrubSecrets(line, startSecrets({ OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20collector-tok-0123' }))).toBe('LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent (got "[REDACTED]")')
  })
})
