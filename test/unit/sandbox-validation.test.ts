import { describe, expect, it } from 'vitest'
import { Validator } from '../../src/sandbox/validation.js'

// The sandbox's integer rule is Laravel's: filter_var($value, FILTER_VALIDATE_INT), which
// reads the value as a string (true is "1"), trims white space and NUL at its ends, takes a
// sign and refuses a leading zero, so the sandbox answers 422 where the platform does.
describe('Validator.integer, as Laravel validates `integer`', () => {
  const read = (value: unknown) => {
    const v = new Validator()
    return { id: v.integer('userId', value), refused: v.hasErrors() }
  }

  it.each([
    ['101', 101], [101, 101], [' 101', 101], ['101 ', 101], ['\t101\n', 101], ['+101', 101], ['-5', -5], ['0', 0], ['-0', 0], [true, 1],
  ])('takes %j as %d', (value, id) => {
    expect(read(value)).toEqual({ id, refused: false })
  })

  it.each([
    ['0101'], ['00'], ['101abc'], ['1e2'], ['1.0'], ['0x65'], ['１０１'], [''], [' '], ['+'], ['- 1'], [false], [null], [[101]], [{ a: 101 }], [101.5], ['99999999999999999999'],
  ])('refuses %j', (value) => {
    expect(read(value)).toEqual({ id: undefined, refused: true })
  })
})
