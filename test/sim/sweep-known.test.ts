import { describe, expect, it } from 'vitest'
import { type SeedFailure, unexpected } from './sweep.js'

const fail = (seed: number, ...guarantees: string[]): SeedFailure => ({ seed, guarantees, text: `seed ${seed}: ${guarantees.join(', ')}` })

describe('a sweep against its known failures', () => {
  const known = new Map([[2, ['replicas']]])

  it('holds when only the known seeds break what they list', () => {
    expect(unexpected([1, 2, 3], [fail(2, 'replicas')], known)).toEqual([])
  })

  it('names a seed not on the list', () => {
    expect(unexpected([1, 2, 3], [fail(2, 'replicas'), fail(3, 'isolation')], known)).toEqual(['seed 3: isolation'])
  })

  it('names a known seed that breaks a guarantee it does not list', () => {
    expect(unexpected([2], [fail(2, 'replicas', 'fair by time')], known)).toEqual(['seed 2: replicas, fair by time'])
  })

  it('names a known seed that keeps every guarantee now', () => {
    expect(unexpected([1, 2], [], known)).toEqual(['seed 2 keeps every guarantee now: take it off the known failures'])
  })

  it('leaves out known seeds the sweep did not run', () => {
    expect(unexpected([1], [], known)).toEqual([])
  })
})
