import { describe, expect, it } from 'vitest'
import { slotMasters } from '../../src/redis/cluster-masters.js'

describe("a Cluster's masters, from its slot table", () => {
  it('each slot names its master first, then its replicas: each master once, in slot order; slots not known yet name none', () => {
    const slots = [['10.0.0.1:6379', '10.0.0.4:6379'], ['10.0.0.1:6379'], undefined, ['10.0.0.2:6379'], ['10.0.0.3:6379', '10.0.0.5:6379'], ['10.0.0.2:6379']]
    expect(slotMasters(slots)).toEqual(['10.0.0.1:6379', '10.0.0.2:6379', '10.0.0.3:6379'])
    expect(slotMasters([])).toEqual([])
  })
})
