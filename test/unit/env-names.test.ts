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

  it('measures edits, swaps counted once, bounded', () => {
    expect([editDistance('HOST', 'HOST', 1), editDistance('HSOT', 'HOST', 1), editDistance('HOME', 'HOST', 1), editDistance('A', 'ABCDEF', 2)]).toEqual([0, 1, 2, 3])
  })
})
