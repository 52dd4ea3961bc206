import { describe, expect, it } from 'vitest'
import { FairQueue, type Priority, type Queued } from '../../src/platform/governor/fair-queue.js'

// Push-out from a full queue goes by places for weight (platform/governor/fair-queue.ts):
// a team's own background work gives way to its callers first; another team's calls give
// way only to a team that would hold no more places than it (background) or fewer (the
// newcomer's own priority). A flood of one team's misses so never takes the places of
// another team's refreshes, whatever their priority.

let seq = 0
const waiter = (team: string, priority: Priority): Queued => ({ team, priority, seq: ++seq })
const equal = () => 1

function queueOf(...calls: [team: string, priority: Priority][]): { queue: FairQueue<Queued>; calls: Queued[] } {
  const queue = new FairQueue<Queued>()
  const made = calls.map(([team, priority]) => waiter(team, priority))
  for (const w of made) queue.push(w)
  return { queue, calls: made }
}

describe('push-out from a full queue', () => {
  it('leaves a team\'s refreshes to it once the newcomer\'s team holds more places', () => {
    const { queue } = queueOf(['dash', 'ahead'], ['dash', 'ahead'], ['noisy', 'caller'], ['noisy', 'caller'])
    expect(queue.displaced({ team: 'noisy', priority: 'caller' }, 4, equal)).toBe('refuse')
  })

  it('takes the newest of the lowest priority of a team holding at least as many places as the newcomer\'s would', () => {
    const { queue, calls } = queueOf(['dash', 'ahead'], ['dash', 'warm'], ['dash', 'ahead'], ['noisy', 'caller'])
    expect(queue.displaced({ team: 'noisy', priority: 'caller' }, 4, equal)).toBe(calls[1])
    const even = queueOf(['dash', 'ahead'], ['noisy', 'caller'])
    expect(even.queue.displaced({ team: 'noisy', priority: 'caller' }, 2, equal)).toBe('refuse')
    const level = queueOf(['dash', 'ahead'], ['dash', 'ahead'], ['noisy', 'caller'])
    expect(level.queue.displaced({ team: 'noisy', priority: 'caller' }, 3, equal)).toBe(level.calls[1])
  })

  it('takes a caller\'s place only from a team holding more places than the newcomer\'s would', () => {
    const { queue, calls } = queueOf(['a', 'caller'], ['a', 'caller'], ['a', 'caller'])
    expect(queue.displaced({ team: 'b', priority: 'caller' }, 3, equal)).toBe(calls[2])
    const even = queueOf(['a', 'caller'], ['b', 'caller'])
    expect(even.queue.displaced({ team: 'b', priority: 'caller' }, 2, equal)).toBe('refuse')
  })

  it('gives a team\'s own background work to its caller first, whoever holds more', () => {
    const { queue, calls } = queueOf(['a', 'caller'], ['a', 'warm'], ['b', 'caller'], ['b', 'caller'], ['b', 'ahead'])
    expect(queue.displaced({ team: 'a', priority: 'caller' }, 5, equal)).toBe(calls[1])
  })

  it('weighs places by the teams\' weights', () => {
    const { queue } = queueOf(['big', 'ahead'], ['big', 'ahead'], ['big', 'ahead'], ['small', 'caller'])
    const weights = (team: string) => (team === 'big' ? 4 : 1)
    expect(queue.displaced({ team: 'small', priority: 'caller' }, 4, weights)).toBe('refuse')
    expect(queue.displaced({ team: 'small', priority: 'caller' }, 4, equal)).not.toBe('refuse')
  })

  it('has room while the queue is not full', () => {
    const { queue } = queueOf(['a', 'caller'])
    expect(queue.displaced({ team: 'b', priority: 'warm' }, 2, equal)).toBeNull()
  })
})
