import { describe, expect, it } from 'vitest'
import { explainSentinelError } from '../../src/redis/sentinel-errors.js'

describe('a Sentinel-routed connection error, explained', () => {
  it('a master name the Sentinels do not know names the setting, the name and where the right one is', () => {
    const ioredis = 'All sentinels are unreachable. Retrying from scratch after 20ms. Last error: ERR No such master with that name'
    expect(explainSentinelError(ioredis, 'mymastr', '10.0.0.1:26379,10.0.0.2:26379')).toBe(
      'the Sentinels (10.0.0.1:26379,10.0.0.2:26379) answer but know no master named "mymastr": set redis.sentinelName to the name in their "sentinel monitor" line (SENTINEL MASTERS lists them)',
    )
  })

  it('a Sentinel that refuses the login (NOAUTH, WRONGPASS) names the password setting, not unreachable Sentinels', () => {
    const noauth = 'All sentinels are unreachable. Retrying from scratch after 20ms. Last error: NOAUTH Authentication required.'
    expect(explainSentinelError(noauth, 'mymaster', '10.0.0.1:26379')).toBe(
      'the Sentinels (10.0.0.1:26379) answer but ask a password (NOAUTH): set REDIS_SENTINEL_PASSWORD (or REDIS_SENTINEL_PASSWORD_FILE) to the one in their sentinel.conf (requirepass)',
    )
    const wrongpass = 'All sentinels are unreachable. Retrying from scratch after 20ms. Last error: WRONGPASS invalid username-password pair or user is disabled.'
    expect(explainSentinelError(wrongpass, 'mymaster', '10.0.0.1:26379')).toBe(
      'the Sentinels (10.0.0.1:26379) answer but refuse the password REDIS_SENTINEL_PASSWORD gives (WRONGPASS): set it to the one in their sentinel.conf (requirepass)',
    )
  })

  it('any other error is left as it is', () => {
    for (const message of ['connect ECONNREFUSED 127.0.0.1:26379', 'All sentinels are unreachable. Retrying from scratch after 20ms. Last error: connect ECONNREFUSED 127.0.0.1:26379']) {
      expect(explainSentinelError(message, 'mymaster', '127.0.0.1:26379')).toBe(message)
    }
  })

  it('a reconnection that began at the end of the Sentinels, having asked none, is no cause', () => {
    expect(explainSentinelError('All sentinels are unreachable. Retrying from scratch after 10ms.', 'mymaster', '127.0.0.1:26379')).toBeNull()
  })
})
