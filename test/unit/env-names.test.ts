import { describe, expect, it } from 'vitest'
import { misspelledVariables } from '../../src/config/env-names.js'
import { editDistance } from '../../src/config/near-names.js'

describe('variables one or two letters from one the gateway reads', () => {
  it('names a dropped, added, swapped or changed letter, and the variable meant', () => {
    const said = misspelledVariables({ PLATFORM_TOKN: 'x', REDIS_URLL: 'x', GATEWAY_SECERT: 'x', ADMIN_TOKEN_FIEL: 'x', PORTT: 'x' })
    expect(said.map((l) => l.split(';')[1])).toEqual([
      ' did you mean ADMIN_TOKEN_FILE? (rename it',
      ' did you mean GATEWAY_SECRET? (rename it',
      ' did you mean PLATFORM_TOKEN? (rename it',
      ' did you mean PORT? (rename it',
      ' did you mean REDIS_URL? (rename it',
    ])
  })

  it('leaves alone the variables it reads, a system\'s own, npm\'s, Kubernetes\' service links and CREDENTIAL_* names', () => {
    const env = { PLATFORM_TOKEN: 'x', REDIS_URL: 'x', HOME: '/root', PATH: '/bin', HOSTNAME: 'vm', TERM: 'xterm', npm_config_cache: '/c', KUBERNETES_SERVICE_HOST: '10.0.0.1', REDIS_PORT: 'tcp://10.0.0.2:6379', CREDENTIAL_REPORTS_TOKN: 'x', NODE_ENV: 'production', UNSET_ONE: undefined }
    expect(misspelledVariables(env)).toEqual([])
  })

  it('names the variables other tools read for what the gateway reads under another name, and the one it reads', () => {
    const said = misspelledVariables({ REDIS_HOST: 'redis.internal', REDIS_PASSWORD: 'x', PLATFORM_URL: 'https://dsp.example.com', PLATFORM_ACCESS_TOKEN: 'x', ADMIN_PASSWORD: 'x', REDIS_PORT: 'tcp://10.0.0.2:6379' })
    expect(said).toEqual([
      'ADMIN_PASSWORD: not a variable the gateway reads; the admin token is ADMIN_TOKEN (or ADMIN_TOKEN_FILE) (the gateway reads nothing of it; rename or remove it)',
      'PLATFORM_ACCESS_TOKEN: not a variable the gateway reads; a ready platform token is PLATFORM_TOKEN (or PLATFORM_TOKEN_FILE) (the gateway reads nothing of it; rename or remove it)',
      'PLATFORM_URL: not a variable the gateway reads; the platform\'s address is PLATFORM_BASE_URL (the gateway reads nothing of it; rename or remove it)',
      'REDIS_HOST: not a variable the gateway reads; Redis is given whole as REDIS_URL, redis://[user:password@]host[:port][/db] (the gateway reads nothing of it; rename or remove it)',
      'REDIS_PASSWORD: not a variable the gateway reads; Redis is given whole as REDIS_URL, redis://[user:password@]host[:port][/db] (the gateway reads nothing of it; rename or remove it)',
    ])
    expect(said.join('\n')).not.toContain('redis.internal')
  })

  it('measures edits, swaps counted once, bounded', () => {
    expect([editDistance('HOST', 'HOST', 1), editDistance('HSOT', 'HOST', 1), editDistance('HOME', 'HOST', 1), editDistance('A', 'ABCDEF', 2)]).toEqual([0, 1, 2, 3])
  })
})
