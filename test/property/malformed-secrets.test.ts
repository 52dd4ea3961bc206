import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { ConfigError } from '../../src/config.js'
import { buildGateway, withTestSecret } from '../helpers/build-gateway.js'
import { ensureBuilt } from '../helpers/gateway-process.js'
import { loadConfigFrom } from '../helpers/load-config.js'
import { leakedSecrets } from '../helpers/secret-scan.js'

// Every variable or file that can hold a secret, in malformed forms
// (wrong scheme, missing separators, bad port, stray spaces, JSON instead of a URL, a
// pasted token where a hash belongs), each with a generated secret. Whatever the form:
// the start error names the variable and never holds the secret or 8 characters of it,
// in loadConfig, in the built app's log, and in the output of the process's start.
//
// CI runs a fixed seed; PROPERTY_RUNS=<n> runs longer with a new seed, which a failure
// prints (PROPERTY_SEED=<n> replays it).

const RUNS = Number(process.env.PROPERTY_RUNS ?? 200)
const SEED = process.env.PROPERTY_SEED !== undefined ? Number(process.env.PROPERTY_SEED) : process.env.PROPERTY_RUNS ? Date.now() : 16
const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url))
/** Characters of a secret that show in a message make a significant part of it. */
const WINDOW = 8
const BASE_ENV = { PLATFORM_BASE_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN: 'property-base-platform-token' }

const ALPHABET = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789']
const secret = fc.noBias(fc.string({ unit: fc.constantFrom(...ALPHABET), minLength: 20, maxLength: 40 }))

/** Where a malformed secret goes: the environment, files, and the variable the error must name. */
interface Case {
  form: string
  env: Record<string, string>
  files: Record<string, string>
  names: string
  /** The form must be refused at start (some, like a JSON token, are opaque and valid). */
  refused: boolean
}

const REDIS_FORMS: [string, (s: string) => string][] = [
  ['a missing colon', (s) => `redis//:${s}@127.0.0.1:6379`],
  ['one slash', (s) => `redis:/:${s}@127.0.0.1:6379`],
  ['no slashes', (s) => `redis::${s}@127.0.0.1:6379`],
  ['a missing @', (s) => `redis://:${s}127.0.0.1:6379`],
  ['a port out of range', (s) => `redis://:${s}@127.0.0.1:99999`],
  ['a port that is no number', (s) => `redis://:${s}@127.0.0.1:port`],
  ['a wrong scheme', (s) => `http://:${s}@127.0.0.1:6379`],
  ['a scheme typo', (s) => `reddis://default:${s}@127.0.0.1:6379`],
  ['stray spaces', (s) => ` redis://: ${s} @127.0.0.1:6379 `],
  ['a trailing space', (s) => `redis://:${s}@127.0.0.1:6379 `],
  ['a space in the host', (s) => `redis://:${s}@127.0.0 .1:6379`],
  ['JSON', (s) => JSON.stringify({ url: `redis://:${s}@127.0.0.1:6379` })],
  ['JSON with a password', (s) => JSON.stringify({ host: '127.0.0.1', port: 6379, password: s })],
  ['no host', (s) => `redis://:${s}@`],
  ['no host, a port', (s) => `redis://:${s}@:6379`],
  ['a broken IPv6 host', (s) => `redis://:${s}@[::1:6379`],
  ['the password alone', (s) => s],
  ['a database that is no number', (s) => `redis://:${s}@127.0.0.1:6379/cache`],
  ['a password in the query', (s) => `redis://127.0.0.1:port/?password=${s}`],
  ['a newline', (s) => `redis://:${s}@127.0.0.1:6379\n`],
]

// Tokens are opaque: only spaces at their ends and control characters make one malformed.
const TOKEN_FORMS: [string, (s: string) => string, boolean][] = [
  ['stray spaces', (s) => ` ${s} `, true],
  ['a trailing newline', (s) => `${s}\n`, true],
  ['a control character', (s) => `${s.slice(0, 10)}\u0007${s.slice(10)}`, true],
  ['JSON', (s) => JSON.stringify({ token: s }), false],
  ['a bearer prefix', (s) => `Bearer ${s}`, false],
]
const TOKEN_VARIABLES = ['ADMIN_TOKEN', 'GATEWAY_SECRET', 'PLATFORM_TOKEN', 'PLATFORM_PASSWORD', 'PLATFORM_CLIENT_SECRET']

function cases(s: string): Case[] {
  const all: Case[] = REDIS_FORMS.map(([form, make]) => ({ form: `REDIS_URL: ${form}`, env: { REDIS_URL: make(s) }, files: {}, names: 'REDIS_URL', refused: true }))
  for (const name of TOKEN_VARIABLES) {
    // A login needs all four of its parts; a token and a login are one too many.
    const login = name.startsWith('PLATFORM_') && name !== 'PLATFORM_TOKEN'
    const withValue = (value: string): Record<string, string> =>
      login ? { PLATFORM_TOKEN: '', PLATFORM_USERNAME: 'user', PLATFORM_PASSWORD: 'password-0000', PLATFORM_CLIENT_ID: '2', PLATFORM_CLIENT_SECRET: 'client-secret-0000', [name]: value } : { [name]: value }
    for (const [form, make, refused] of TOKEN_FORMS) {
      all.push({ form: `${name}: ${form}`, env: withValue(make(s)), files: {}, names: name, refused })
      if (name !== 'PLATFORM_TOKEN') all.push({ form: `${name}_FILE: ${form}`, env: { ...withValue(''), [`${name}_FILE`]: '/virtual/secret' }, files: { '/virtual/secret': `${make(s)}\u0000` }, names: `${name}_FILE`, refused: true })
    }
    all.push({ form: `${name}: too short`, env: withValue(s.slice(0, 12)), files: {}, names: name, refused: name === 'ADMIN_TOKEN' || name === 'GATEWAY_SECRET' })
  }
  all.push(
    { form: 'PLATFORM_TOKEN_FILE: a control character', env: { PLATFORM_TOKEN: '', PLATFORM_TOKEN_FILE: '/virtual/token' }, files: { '/virtual/token': `${s}\u0000x` }, names: 'PLATFORM_TOKEN_FILE', refused: true },
    { form: 'PLATFORM_TOKEN_FILE: JSON', env: { PLATFORM_TOKEN: '', PLATFORM_TOKEN_FILE: '/virtual/token' }, files: { '/virtual/token': JSON.stringify({ access_token: s }) }, names: 'PLATFORM_TOKEN_FILE', refused: false },
    { form: 'ADMIN_TOKENS_FILE: a pasted token', env: { ADMIN_TOKENS_FILE: '/virtual/admins' }, files: { '/virtual/admins': `alice:${s}\n` }, names: 'ADMIN_TOKENS_FILE', refused: true },
    { form: 'ADMIN_TOKENS_FILE: a token for a hash', env: { ADMIN_TOKENS_FILE: '/virtual/admins' }, files: { '/virtual/admins': `alice:sha256:${s}\n` }, names: 'ADMIN_TOKENS_FILE', refused: true },
    { form: 'ADMIN_TOKENS_FILE: JSON', env: { ADMIN_TOKENS_FILE: '/virtual/admins' }, files: { '/virtual/admins': JSON.stringify({ alice: s }) }, names: 'ADMIN_TOKENS_FILE', refused: true },
    { form: 'CONFIG_FILE: a plaintext team key', env: { CONFIG_FILE: '/virtual/config.yaml' }, files: { '/virtual/config.yaml': `teams:\n  t:\n    keys: ["${s}"]\n    advertisers: ["*"]\n` }, names: 'teams.t.keys', refused: true },
    { form: 'CONFIG_FILE: a plaintext team key as a hash', env: { CONFIG_FILE: '/virtual/config.yaml' }, files: { '/virtual/config.yaml': `teams:\n  t:\n    keys: [{ hash: "sha256:${s}", id: k1 }]\n    advertisers: ["*"]\n` }, names: 'teams.t.keys', refused: true },
    { form: 'CONFIG_FILE: broken YAML around a key', env: { CONFIG_FILE: '/virtual/config.yaml' }, files: { '/virtual/config.yaml': `teams:\n  t:\n    keys: [${s}\n  advertisers: [*\n` }, names: 'CONFIG_FILE', refused: true },
    { form: 'CONFIG_FILE: a secret where a setting goes', env: { CONFIG_FILE: '/virtual/config.yaml' }, files: { '/virtual/config.yaml': `gatewaySecret: ${s}\nadmin:\n  token: ${s}\n` }, names: 'CONFIG_FILE', refused: true },
  )
  return all
}

/** The part of `secret` that `text` shows, if any: the whole, 8 characters of it, or its bytes. */
function shownPart(text: string, s: string): string | null {
  for (let i = 0; i + WINDOW <= s.length; i++) {
    const part = s.slice(i, i + WINDOW)
    if (text.includes(part) || text.includes(encodeURIComponent(part))) return part
  }
  return leakedSecrets(text, [s]).length > 0 ? s : null
}

const withCase = fc.tuple(secret, fc.nat()).map(([s, n]) => {
  const all = cases(s)
  return { s, c: all[n % all.length] as Case }
})

function attempt(c: Case): { error: string | null; config: ReturnType<typeof loadConfigFrom> | null } {
  try {
    return { error: null, config: loadConfigFrom({ ...BASE_ENV, ...c.env }, c.files) }
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    return { error: err.message, config: null }
  }
}

describe('a malformed secret, wherever it is set', () => {
  it('is refused at start by an error that names its variable and shows no part of the secret', () => {
    fc.assert(
      fc.property(withCase, ({ s, c }) => {
        const { error } = attempt(c)
        if (c.refused) expect(error, c.form).not.toBeNull()
        if (error === null) return
        expect(error, c.form).toContain(c.names)
        expect(shownPart(error, s), `${c.form}: ${error}`).toBeNull()
      }),
      { numRuns: RUNS, seed: SEED },
    )
  })

  it('covers every form at least once with the seed CI runs', () => {
    const forms = new Set<string>()
    fc.assert(
      fc.property(withCase, ({ c }) => {
        forms.add(c.form)
      }),
      { numRuns: RUNS * 5, seed: SEED },
    )
    expect([...forms].length).toBe(cases('x'.repeat(20)).length)
  })

  it('when taken (an opaque token), builds and starts an app whose log shows no part of it', async () => {
    await fc.assert(
      fc.asyncProperty(withCase, async ({ s, c }) => {
        const { config } = attempt(c)
        if (config === null) return
        const gw = await buildGateway(config)
        try {
          await gw.proxy.inject({ method: 'GET', url: '/api/v1/campaign/get', headers: { 'x-api-key': 'rgw_unknown' } })
        } finally {
          await gw.close()
        }
        expect(shownPart(gw.logs.text(), s), c.form).toBeNull()
      }),
      { numRuns: Math.ceil(RUNS / 4), seed: SEED },
    )
  })

  // A Redis that cannot be reached with a password in its URL: connection errors are logged.
  it('keeps a REDIS_URL password out of the log of a Redis that cannot be reached', async () => {
    await fc.assert(
      fc.asyncProperty(secret, async (s) => {
        const gw = await buildGateway(loadConfigFrom(withTestSecret({ ...BASE_ENV, REDIS_URL: `redis://default:${s}@127.0.0.1:1/0`, LOG_LEVEL: 'debug' })))
        await gw.close()
        expect(shownPart(gw.logs.text(), s)).toBeNull()
      }),
      { numRuns: 3, seed: SEED },
    )
  })
})

describe('the process start-up output', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rgw-malformed-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('exits 78 naming the variable, and prints no part of the secret', async () => {
    ensureBuilt()
    await fc.assert(
      fc.asyncProperty(withCase.filter(({ c }) => c.refused), async ({ s, c }) => {
        // The case's virtual files, written for the process.
        const env: Record<string, string> = { PATH: process.env.PATH ?? '', ...BASE_ENV, ...c.env }
        for (const [path, text] of Object.entries(c.files)) {
          const real = join(dir, path.replace(/\W/g, '_'))
          writeFileSync(real, text)
          for (const [k, v] of Object.entries(env)) if (v === path) env[k] = real
        }
        const { code, output } = await run(env)
        expect(code, `${c.form}: ${output}`).toBe(78)
        expect(output, c.form).toContain(c.names)
        expect(shownPart(output, s), `${c.form}: ${output}`).toBeNull()
      }),
      { numRuns: 12, seed: SEED },
    )
  }, 120_000)
})

function run(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
    child.on('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, output })
    })
  })
}
