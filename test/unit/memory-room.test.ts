import { describe, expect, it } from 'vitest'
import { parseMemoryInfo, resultsPastRoom } from '../../src/redis/memory-room.js'

describe('parseMemoryInfo', () => {
  it("reads maxmemory and its policy from INFO memory's lines", () => {
    const info = '# Memory\r\nused_memory:1675952\r\nmaxmemory:67108864\r\nmaxmemory_human:64.00M\r\nmaxmemory_policy:volatile-lru\r\n'
    expect(parseMemoryInfo(info)).toEqual({ maxBytes: 67_108_864, policy: 'volatile-lru' })
  })

  it('is null for an answer without them', () => {
    expect(parseMemoryInfo('')).toBeNull()
    expect(parseMemoryInfo('maxmemory:1\r\n')).toBeNull()
  })
})

describe('resultsPastRoom', () => {
  const memory = { maxBytes: 1000, policy: 'volatile-lru' }

  it("is the teams' results together once they pass half of maxmemory", () => {
    expect(resultsPastRoom(memory, { teams: 3, resultBytesPerTeam: 167 })).toBe(501)
  })

  it('is null up to half of it, and without a maxmemory', () => {
    expect(resultsPastRoom(memory, { teams: 2, resultBytesPerTeam: 250 })).toBeNull()
    expect(resultsPastRoom({ maxBytes: 0, policy: 'noeviction' }, { teams: 100, resultBytesPerTeam: 1e9 })).toBeNull()
  })
})
