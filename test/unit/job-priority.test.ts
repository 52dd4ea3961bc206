import { describe, expect, it } from 'vitest'
import { FairQueue, type Queued } from '../../src/platform/governor/fair-queue.js'

// A report job's platform call waits in its team's queue after the team's callers and
// before its refreshes and warm-ups (platform/governor/fair-queue.ts); a full queue
// gives a job's place to a caller, and a warm-up's to a job.

type Waiter = Queued & { workClass: string }
let seq = 0
const waiter = (team: string, priority: Waiter['priority']): Waiter => ({ team, priority, seq: ++seq, workClass: 'w' })
const weights = () => 1

describe('a job\'s place among its team\'s platform calls', () => {
  it('after its callers, before its refreshes and warm-ups', () => {
    const queue = new FairQueue<Waiter>()
    const warm = waiter('growth', 'warm')
    const ahead = waiter('growth', 'ahead')
    const job = waiter('growth', 'job')
    const caller = waiter('growth', 'caller')
    for (const w of [warm, ahead, job, caller]) queue.push(w)
    const order: Waiter[] = []
    for (let next = queue.pressing('growth'); next !== null; next = queue.pressing('growth')) {
      order.push(next)
      queue.remove(next)
    }
    expect(order.map((w) => w.priority)).toEqual(['caller', 'job', 'ahead', 'warm'])
  })

  it('a full queue: a caller displaces a job, a job displaces a warm-up, a job does not displace a caller', () => {
    const queue = new FairQueue<Waiter>()
    const job = waiter('growth', 'job')
    queue.push(job)
    expect(queue.displaced({ team: 'other', priority: 'caller' }, 1, weights)).toBe(job)
    expect(queue.displaced({ team: 'other', priority: 'job' }, 1, weights)).toBe('refuse')
    const full = new FairQueue<Waiter>()
    const warm = waiter('growth', 'warm')
    full.push(warm)
    expect(full.displaced({ team: 'growth', priority: 'job' }, 1, weights)).toBe(warm)
    const callers = new FairQueue<Waiter>()
    callers.push(waiter('growth', 'caller'))
    expect(callers.displaced({ team: 'other', priority: 'job' }, 1, weights)).toBe('refuse')
  })
})
