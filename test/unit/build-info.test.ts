import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { buildInfo } from '../../src/observe/build-info.js'

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }

describe('buildInfo', () => {
  it('reads the version from package.json and the Node that runs it', () => {
    expect(buildInfo({})).toEqual({ version, commit: 'unknown', node: process.version })
  })

  it.each([
    ['a whole commit id', '3bf2f54a1c9e0d7b6a5f4e3d2c1b0a9f8e7d6c5b', '3bf2f54a1c9e0d7b6a5f4e3d2c1b0a9f8e7d6c5b'],
    ['an abbreviated one, upper case and padded', ' 3BF2F54 ', '3bf2f54'],
    ['the image default', 'unknown', 'unknown'],
    ['anything else (a label value must not carry it)', 'main"} 1\nx{', 'unknown'],
    ['too short', 'abc', 'unknown'],
  ])('takes GATEWAY_COMMIT only when it is a commit id: %s', (_name, given, commit) => {
    expect(buildInfo({ GATEWAY_COMMIT: given }).commit).toBe(commit)
  })
})
