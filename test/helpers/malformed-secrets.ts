import fc from 'fast-check'
import { leakedSecrets } from './secret-scan.js'

// Every variable or file that can hold a secret, in malformed forms (wrong scheme, missing
// separators, bad port, stray spaces, JSON instead of a URL, a pasted token where a hash
// belongs), each with a generated secret: the cases of test/property/malformed-secrets.test.ts
// (in process) and test/slow/malformed-secrets-process.test.ts (the process's start).
//
// CI runs a fixed seed; PROPERTY_RUNS=<n> runs longer with a new seed, which a failure
// prints (PROPERTY_SEED=<n> replays it).

export const RUNS = Number(process.env.PROPERTY_RUNS ?? 200)
export const SEED = process.env.PROPERTY_SEED !== undefined ? Number(process.env.PROPERTY_SEED) : process.env.PROPERTY_RUNS ? Date.now() : 16
/** Characters of a secret that show in a message make a significant part of it. */
const WINDOW = 8
export const BASE_ENV = { PLATFORM_BASE_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN: 'property-base-platform-token' }

const ALPHABET = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789']
export const secret = fc.noBias(fc.string({ unit: fc.constantFrom(...ALPHABET), minLength: 20, maxLength: 40 }))

/** Where a malformed secret goes: the environment, files, and the variable the error must name. */
export interface Case {
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

// Secrets are opaque: only spaces at their ends and control characters make one malformed;
// a platform token is also what an authorization header carries, so `Bearer <token>` is
// one too. The third item: refused for every variable, or for those it lists.
const TOKEN_FORMS: [string, (s: string) => string, boolean | readonly string[]][] = [
  ['stray spaces', (s) => ` ${s} `, true],
  ['a trailing newline', (s) => `${s}\n`, true],
  ['a control character', (s) => `${s.slice(0, 10)}\u0007${s.slice(10)}`, true],
  ['JSON', (s) => JSON.stringify({ token: s }), false],
  ['a bearer prefix', (s) => `Bearer ${s}`, ['PLATFORM_TOKEN']],
]
const TOKEN_VARIABLES = ['ADMIN_TOKEN', 'GATEWAY_SECRET', 'PLATFORM_TOKEN', 'PLATFORM_PASSWORD', 'PLATFORM_CLIENT_SECRET']

export function cases(s: string): Case[] {
  const all: Case[] = REDIS_FORMS.map(([form, make]) => ({ form: `REDIS_URL: ${form}`, env: { REDIS_URL: make(s) }, files: {}, names: 'REDIS_URL', refused: true }))
  for (const name of TOKEN_VARIABLES) {
    // A login needs all four of its parts; a token and a login are one too many.
    const login = name.startsWith('PLATFORM_') && name !== 'PLATFORM_TOKEN'
    const withValue = (value: string): Record<string, string> =>
      login ? { PLATFORM_TOKEN: '', PLATFORM_USERNAME: 'user', PLATFORM_PASSWORD: 'password-0000', PLATFORM_CLIENT_ID: '2', PLATFORM_CLIENT_SECRET: 'client-secret-0000', [name]: value } : { [name]: value }
    for (const [form, make, refused] of TOKEN_FORMS) {
      all.push({ form: `${name}: ${form}`, env: withValue(make(s)), files: {}, names: name, refused: refused === true || (refused !== false && refused.includes(name)) })
      if (name !== 'PLATFORM_TOKEN') all.push({ form: `${name}_FILE: ${form}`, env: { ...withValue(''), [`${name}_FILE`]: '/virtual/secret' }, files: { '/virtual/secret': `${make(s)}\u0000` }, names: `${name}_FILE`, refused: true })
    }
    all.push({ form: `${name}: too short`, env: withValue(s.slice(0, 12)), files: {}, names: name, refused: name === 'ADMIN_TOKEN' || name === 'GATEWAY_SECRET' })
  }
  all.push(
    { form: 'PLATFORM_TOKEN_FILE: a control character', env: { PLATFORM_TOKEN: '', PLATFORM_TOKEN_FILE: '/virtual/token' }, files: { '/virtual/token': `${s}\u0000x` }, names: 'PLATFORM_TOKEN_FILE', refused: true },
    { form: 'PLATFORM_TOKEN_FILE: a bearer prefix', env: { PLATFORM_TOKEN: '', PLATFORM_TOKEN_FILE: '/virtual/token' }, files: { '/virtual/token': `Bearer ${s}\n` }, names: 'PLATFORM_TOKEN_FILE', refused: true },
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
export function shownPart(text: string, s: string): string | null {
  for (let i = 0; i + WINDOW <= s.length; i++) {
    const part = s.slice(i, i + WINDOW)
    if (text.includes(part) || text.includes(encodeURIComponent(part))) return part
  }
  return leakedSecrets(text, [s]).length > 0 ? s : null
}

export const withCase = fc.tuple(secret, fc.nat()).map(([s, n]) => {
  const all = cases(s)
  return { s, c: all[n % all.length] as Case }
})

