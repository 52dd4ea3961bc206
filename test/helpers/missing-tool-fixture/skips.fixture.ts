import { describe, expect, it } from 'vitest'
import { needTool, TOOLS } from '../missing-tools.js'

const here = needTool({ ...TOOLS.chromium, name: 'a-tool-no-machine-has' }, false, 'the fixture browser test')

describe.skipIf(!here)('needs a missing tool', () => {
  it('never runs', () => {
    expect(here).toBe(true)
  })
})

it('runs without it', () => {
  expect(here).toBe(false)
})
